// The `defaults` command: read, change and watch settings files from a terminal or a script.
//
// Every change goes through the library, under the file's lock, so a running program sees it at
// once and no other process's change is lost. See `defaults help`. The command itself lives in
// the `DefaultsCommandLine` library.
import DefaultsCommandLine
import Foundation

exit(DefaultsCommand.main(Array(CommandLine.arguments.dropFirst())))
