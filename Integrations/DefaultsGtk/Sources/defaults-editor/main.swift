// defaults-editor: the settings of any program that uses Defaults, in a preferences window made
// from the schema the program published beside its file (settings.schema.json): the right row for
// each key, live both ways, and the values the schema does not describe as JSON. The
// dconf-editor of these settings.
//
//     defaults-editor <suite name | path of a settings file>
//     defaults-editor <suite> --schema <file>      the schema from that file
//     defaults-editor <suite> --picture <png>      draws the window once, saves it, and exits
//
// A suite by name is $XDG_CONFIG_HOME/<name>/settings.json with the system files of
// $XDG_CONFIG_DIRS beneath it, as for the `defaults` command. Suites in etcd: `defaults-editor-etcd`
// (Integrations/DefaultsEditorEtcd). The program is `DefaultsEditor.main` of DefaultsAdwaita.
import DefaultsAdwaita
import Foundation

exit(DefaultsEditor.main(Array(CommandLine.arguments.dropFirst())))
