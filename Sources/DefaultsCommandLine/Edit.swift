import Defaults
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `defaults edit`: opens the suite's values in the person's editor, and applies what they saved.
func edit(_ location: SuiteLocation) throws(ToolError) {
    // A file that is not valid JSON opens as it is, for the person to mend: then everything in
    // the edited copy is applied, and the broken file is kept beside it as `.corrupt-<time>`.
    var original: [String: JSONValue] = [:]
    var text = "{}\n"
    var isBroken = false
    if location.file == nil {
        original = try location.read() ?? [:]
        text = render(.object(original)) + "\n"
    } else if let bytes = try readBytes(at: location.place) {
        do {
            original = try members(of: bytes, in: location.place, fix: "opening it as it is, to mend")
            text = render(.object(original)) + "\n"
        } catch .file(let message) {
            printError("defaults: " + message)
            text = String(decoding: bytes, as: UTF8.self)
            isBroken = true
        }
    }
    let schema = try SuiteSchema.published(for: location)
    schema?.warnAboutRoot()
    // The record of the migrations run is no setting: not shown, so not changed. Nor is what is
    // stored under a secret's name, flat or nested, as `export` leaves it out: the person never
    // sees it, an edit cannot set it, and the file keeps it as it is.
    let secrets = schema?.secretNames ?? SecretNames([])
    let shown = secrets.masking(original, with: nil).filter { !$0.key.isEmpty }
    if shown != original {
        original = shown
        text = render(.object(original)) + "\n"
    }
    let folder = try makePrivateFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let copy = folder + "/" + (location.argument.contains("/") ? "settings" : location.argument) + ".json"
    // Readable by this user alone, as the folder is.
    let descriptor = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
        throw .file("cannot write the copy to edit, \(copy): \(String(cString: strerror(errno)))")
    }
    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    do {
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    } catch {
        throw .file("cannot write the copy to edit, \(copy): \(error.localizedDescription)")
    }
    let edited = try editUntilValid(copy) { edited in
        schema?.problems(in: edited, comparedWith: isBroken ? [:] : original) ?? []
    }
    var changes: [String: JSONValue?] = [:]
    for (name, value) in edited where isBroken || original[name] != value { changes[name] = value }
    for name in original.keys where edited[name] == nil { changes[name] = .some(nil) }
    guard !changes.isEmpty || isBroken else {
        printError("defaults: no changes")
        return
    }
    try change(location, replacingBrokenFile: isBroken, keepingSecrets: true) { _ in changes }
    let names = changes.keys.sorted(by: utf8Precedes).joined(separator: ", ")
    printError(
        "defaults: applied \(changes.count) change\(changes.count == 1 ? "" : "s") to \(location.argument): \(names)"
    )
}

/// Opens `copy` in the person's editor until it holds a JSON object whose members `check` finds
/// no problem with, and returns its members.
///
/// Without a terminal to ask on, an invalid copy ends the command (exit 2).
private func editUntilValid(
    _ copy: String,
    check: ([String: JSONValue]) -> [String]
) throws(ToolError) -> [String: JSONValue] {
    let environment = ProcessInfo.processInfo.environment
    let editor = [environment["VISUAL"], environment["EDITOR"]].compactMap { $0 }.first { !$0.isEmpty } ?? "vi"
    while true {
        try runEditor(editor, on: copy)
        guard let bytes = try readBytes(at: copy) else { throw .file("the edited copy \(copy) is gone") }
        do throws(ToolError) {
            let edited = try members(of: bytes, in: "the edited copy", fix: "nothing was applied")
            let problems = check(edited)
            guard problems.isEmpty else {
                throw ToolError.file(problems.joined(separator: "\ndefaults: ") + "; nothing was applied")
            }
            return edited
        } catch .file(let message) {
            printError("defaults: " + message)
            guard isatty(STDIN_FILENO) == 1 else { throw .reported(status: 2) }
            FileHandle.standardError.write(Data("Edit it again? [Y/n] ".utf8))
            let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? "n"
            if answer.hasPrefix("n") { throw .reported(status: 2) }
        }
    }
}

/// Runs `editor` (a command line for the shell, so it may carry options) on `file`, and waits.
///
/// The editor is spawned in this process's own process group, with the terminal as it is: in a
/// group of its own (as Foundation's `Process` starts children) it would be stopped the moment it
/// touched the terminal. Ctrl-C is the editor's while it runs.
private func runEditor(_ editor: String, on file: String) throws(ToolError) {
    let arguments = ["/bin/sh", "-c", editor + " \"$1\"", "sh", file]
    var argv = arguments.map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var child: pid_t = 0
    let previousInterrupt = signal(SIGINT, SIG_IGN)
    let previousQuit = signal(SIGQUIT, SIG_IGN)
    defer {
        signal(SIGINT, previousInterrupt)
        signal(SIGQUIT, previousQuit)
    }
    // The child must not inherit the ignored signals: reset them to their defaults in it.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    sigaddset(&defaults, SIGINT)
    sigaddset(&defaults, SIGQUIT)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
    let spawned = posix_spawn(&child, "/bin/sh", nil, &attributes, &argv, environ)
    guard spawned == 0 else {
        throw .file("cannot start the editor (\(editor)): \(String(cString: strerror(spawned)))")
    }
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 {
        guard errno == EINTR else { throw .file("waiting for the editor: \(String(cString: strerror(errno)))") }
    }
    let exited = status & 0x7F == 0
    let code = (status >> 8) & 0xFF
    guard exited, code == 0 else {
        let how = exited ? "failed with status \(code)" : "was stopped by signal \(status & 0x7F)"
        throw .file("the editor (\(editor)) \(how); nothing was applied")
    }
}

/// A new folder only this user can read, for the copy being edited.
private func makePrivateFolder() throws(ToolError) -> String {
    let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array((base + "/defaults-edit-XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw .file("cannot make a folder in \(base) for the copy to edit: \(String(cString: strerror(errno)))")
    }
    return String(cString: made)
}
