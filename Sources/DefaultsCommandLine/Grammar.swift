// The command line, as data: each command's synopses are both its help text and its grammar.
//
// A synopsis is read word by word: `word` is the command itself, `<name>` one argument,
// `<name>...` one or more, `[<name>]` an optional one, `[<name>...]` any number, `--flag` an option
// that must be there, `[--flag]` one that may, and `--flag <name>` an option with a value. Options
// may come anywhere after the command; `--` ends them, so a key may be named `--all`.

/// One command: its synopses (one per form), a line for the command list, and its help.
struct CommandSpec {
    let name: String
    let synopses: [String]
    let summary: String
    let details: String
}

let commands: [CommandSpec] = [
    CommandSpec(
        name: "suites",
        synopses: ["suites"],
        summary: "suites found in the config directory, one a line",
        details: """
            Lists every folder of $XDG_CONFIG_HOME (or ~/.config) that holds a settings.json.
            """
    ),
    CommandSpec(
        name: "path",
        synopses: ["path <suite>"],
        summary: "the file's path",
        details: """
            Prints where the suite's file is, whether or not it exists yet.
            """
    ),
    CommandSpec(
        name: "keys",
        synopses: ["keys <suite> [--described]"],
        summary: "the suite's key names, one a line",
        details: """
            Lists the keys stored in the file, sorted. --described adds the keys the program's
            published schema describes, stored or not (the shell completions use it). A name that
            holds a line feed or a tab is printed as a JSON string; in every command's output,
            control characters and marks that reorder text are written as \\uXXXX.
            """
    ),
    CommandSpec(
        name: "describe",
        synopses: ["describe <suite> [<key>]"],
        summary: "what each key is: type, range, default, summary, value and where it comes from",
        details: """
            Reads the schema the program published beside the file (settings.schema.json) and
            prints, for the key or for every key it describes: its summary, its type, its range
            or cases, its default, its current value and where that value comes from. A suite
            whose program published no schema has nothing to describe (exit 1).
            """
    ),
    CommandSpec(
        name: "migrate",
        synopses: ["migrate <suite> [--dry-run]"],
        summary: "run the renames and retirements the program's schema declares; --dry-run shows them",
        details: """
            Reads the migrations the program published in its schema (settings.schema.json): the
            keys' former names and the program's own steps. Under the file's lock, runs those the
            file does not record as run yet and the command can run itself (a key's rename, a
            retired key) and records them in the file, so the program does not run them again;
            prints each with the values it changed. Those that run the program's code (a changed
            type, a split) are listed as left for the program. --dry-run changes nothing.
            """
    ),
    CommandSpec(
        name: "read",
        synopses: ["read <suite> [<key>] [--merged] [--origin]"],
        summary: "the whole file as JSON, or one value as JSON",
        details: """
            Prints what the file holds, numbers exactly as written; objects and arrays are
            indented, so `defaults read app | jq` works. Never shows a program's launch overrides.

            A key's value is the one programs read: a value the system files in $XDG_CONFIG_DIRS
            (/etc/xdg when unset) lock, or else the user's, or else the first system file's.
            --merged prints every key so, not only the user's file. --origin adds where each
            value comes from: a line after the value, or a `# from` comment after each key.
            """
    ),
    CommandSpec(
        name: "write",
        synopses: ["write <suite> <key> <json> [--force]", "write <suite> <key> --string <text> [--force]"],
        summary: "store a JSON value (42, true, \"text\", [1, 2], {\"w\": 1}), or text as it is",
        details: """
            Stores the value under the file's lock, so a running program sees it at once and
            no other process's change is lost. The value must be JSON: quote text as a JSON
            string ('"dark"'), or pass it with --string and no quoting. Creates the file and
            its folder when they do not exist. A key a system file locks is not written (exit 4).
            When the program published a schema, a value that breaks the key's schema (JSON
            Schema 2020-12: its type, range, cases, pattern, members...) is refused (exit 2),
            each broken rule named with where it is in the value, and nothing is written;
            --force writes it anyway. A keyword of the schema the check cannot apply is named
            in a warning.
            """
    ),
    CommandSpec(
        name: "delete",
        synopses: ["delete <suite> <key>...", "delete <suite> --all"],
        summary: "remove keys (programs read their defaults again), or every key",
        details: """
            Removes the named keys in one change; if any of them is not stored, or a system file
            locks one, nothing is removed. --all empties the file but for the keys a system file
            locks, which stay (exit 4).
            """
    ),
    CommandSpec(
        name: "reset",
        synopses: ["reset <suite> <key>..."],
        summary: "remove keys so programs read their defaults again; keys not stored are fine",
        details: """
            Removes the named keys in one change, under the file's lock. Unlike delete, a key
            that is not stored is no error: it reads its default already. A key a system file
            locks is not removed, nor is any other (exit 4).
            """
    ),
    CommandSpec(
        name: "watch",
        synopses: ["watch <suite> [<key>...] [--json]"],
        summary: "one line per change, from any process or hand edit, until interrupted",
        details: """
            Prints `key: old -> new` for every change to the file (or to the named keys), made
            by any process or by editing the file, as it happens; `(unset)` stands for no value,
            and a name that would break the line is shown as a JSON string. A lock a system
            file adds or lifts ends the line with `(lock added or lifted)`. With --json, one
            object a line: {"key": …, "new": …, "old": …}, without "new" or "old" when there is
            or was no value, with "lockChanged": true for a lock. Stops on Ctrl-C.
            """
    ),
    CommandSpec(
        name: "edit",
        synopses: ["edit <suite>"],
        summary: "edit a copy in $VISUAL or $EDITOR (vi otherwise), then apply your changes",
        details: """
            Opens a copy of the file in your editor, like `crontab -e`. When the editor exits,
            the copy is checked: if it is not a JSON object, the error is shown and, on a
            terminal, you are offered to edit it again; without a terminal nothing is applied.
            When the program published a schema, a changed value that breaks its key's schema
            is refused the same way, as write refuses it. A valid copy applies only the keys you
            changed, under the file's lock, so keys
            another process changed meanwhile are kept. A file that is not valid JSON opens as it
            is, for you to mend; the broken file is kept beside it as settings.json.corrupt-<time>.
            """
    ),
    CommandSpec(
        name: "export",
        synopses: ["export <suite> [<file>]"],
        summary: "the whole file, to standard output or a file",
        details: """
            Writes the suite's values as a JSON object to <file>, or to standard output when
            <file> is - or not given.
            """
    ),
    CommandSpec(
        name: "import",
        synopses: ["import <suite> <file> [--replace] [--force]"],
        summary: "merge a file's keys into the suite (or replace them all), after validating it",
        details: """
            Reads <file> (- for standard input), checks that it is one JSON object, then stores
            its keys in one change under the file's lock. Keys it does not name are kept, unless
            --replace is given. An invalid file changes nothing. When the program published a
            schema, a value that breaks its key's schema is refused as write refuses it (exit 2)
            and nothing is imported; --force imports it anyway.
            """
    ),
    CommandSpec(
        name: "help",
        synopses: ["help [<command>]"],
        summary: "this list, or one command's help (also <command> --help)",
        details: """
            Shows the commands, or how to use one of them.
            """
    ),
]

/// What the arguments of one command came to.
struct ParsedArguments {
    /// The command's name.
    let command: String
    /// Arguments by the name in angle brackets; repeated ones in order.
    var values: [String: [String]] = [:]
    /// The options given, with their value for those that take one.
    var options: [String: String] = [:]

    /// The single argument called `name`, if given.
    func value(_ name: String) -> String? { values[name]?.first }
    /// Whether the option `--name` was given.
    func has(_ option: String) -> Bool { options[option] != nil }
}

/// What a synopsis says, word by word.
private enum Element {
    case word(String)
    case argument(name: String, optional: Bool, repeating: Bool)
    case option(name: String, optional: Bool, valueName: String?)
}

private func elements(of synopsis: String) -> [Element] {
    let words = synopsis.split(separator: " ").map(String.init)
    var result: [Element] = []
    var index = 0
    while index < words.count {
        var word = words[index]
        let optional = word.hasPrefix("[") && word.hasSuffix("]")
        if optional { word = String(word.dropFirst().dropLast()) }
        let repeating = word.hasSuffix("...")
        if repeating { word = String(word.dropLast(3)) }
        if word.hasPrefix("--") {
            var valueName: String?
            if index + 1 < words.count, words[index + 1].hasPrefix("<") {
                valueName = String(words[index + 1].dropFirst().dropLast())
                index += 1
            }
            result.append(.option(name: String(word.dropFirst(2)), optional: optional, valueName: valueName))
        } else if word.hasPrefix("<") {
            result.append(
                .argument(name: String(word.dropFirst().dropLast()), optional: optional, repeating: repeating)
            )
        } else {
            result.append(.word(word))
        }
        index += 1
    }
    return result
}

/// Matches `arguments` (after the command's name) against `spec`'s synopses.
///
/// The form used is the first whose required options are all given, or else the first with none.
func parse(_ arguments: [String], for spec: CommandSpec) throws(ToolError) -> ParsedArguments {
    let forms = spec.synopses.map(elements(of:))
    let given = Set(arguments.prefix { $0 != "--" }.filter { $0.hasPrefix("--") }.map { String($0.dropFirst(2)) })
    let requiredOptions = forms.map { form in
        form.compactMap { element -> String? in
            if case .option(let name, false, _) = element { return name }
            return nil
        }
    }
    let chosen =
        requiredOptions.firstIndex { !$0.isEmpty && $0.allSatisfy(given.contains) }
        ?? requiredOptions.firstIndex { $0.isEmpty } ?? 0
    return try match(arguments, form: forms[chosen], spec: spec)
}

private func match(_ arguments: [String], form: [Element], spec: CommandSpec) throws(ToolError) -> ParsedArguments {
    var parsed = ParsedArguments(command: spec.name)
    var options: [String: String?] = [:]
    for case .option(let name, _, let valueName) in form { options[name] = valueName }
    var positional: [String] = []
    var index = 0
    var optionsEnded = false
    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        if optionsEnded || !argument.hasPrefix("--") {
            positional.append(argument)
            continue
        }
        if argument == "--" {
            optionsEnded = true
            continue
        }
        let name = String(argument.dropFirst(2))
        if name == "help" { throw .help(command: spec.name) }
        guard let valueName = options[name] else {
            throw .usage("\(spec.name): unknown option \(argument)", command: spec.name)
        }
        if let valueName {
            guard index < arguments.count else {
                throw .usage("\(spec.name): \(argument) needs a <\(valueName)>", command: spec.name)
            }
            parsed.options[name] = arguments[index]
            parsed.values[valueName] = [arguments[index]]
            index += 1
        } else {
            parsed.options[name] = ""
        }
    }
    for case .option(let name, false, _) in form where parsed.options[name] == nil {
        throw .usage("\(spec.name): --\(name) is missing", command: spec.name)
    }
    var remaining = positional[...]
    for case .argument(let name, let optional, let repeating) in form {
        if remaining.isEmpty {
            guard optional else { throw .usage("\(spec.name): <\(name)> is missing", command: spec.name) }
            continue
        }
        if repeating {
            parsed.values[name] = Array(remaining)
            remaining = []
        } else {
            parsed.values[name] = [remaining.removeFirst()]
        }
    }
    if let extra = remaining.first {
        throw .usage("\(spec.name): unexpected argument \"\(extra)\"", command: spec.name)
    }
    return parsed
}

/// The list of commands, as `defaults help` prints it.
func overview() -> String {
    let width = commands.flatMap(\.synopses).map(\.count).max() ?? 0
    var lines = ["usage: defaults <command> [<arguments>]", ""]
    for spec in commands {
        for (index, synopsis) in spec.synopses.enumerated() {
            let padding = String(repeating: " ", count: width - synopsis.count + 2)
            lines.append("  " + synopsis + (index == 0 ? padding + spec.summary : ""))
        }
    }
    lines += [
        "",
        "<suite> is a suite name ($XDG_CONFIG_HOME/<suite>/settings.json, ~/.config when unset) or,",
        "when it contains a /, the path of a settings file.",
    ]
    for scheme in DefaultsCommand.knownSchemes.withLock({ $0 }) {
        lines.append("It may also be a suite kept elsewhere: \(scheme.example)")
    }
    lines += [
        "",
        "Exit status: 0 done; 1 suite or key not found; 2 usage or invalid value;",
        "3 the file, or a suite kept elsewhere (etcd out of reach, or refusing), could not be read or",
        "written (or the editor failed); 4 a system file locks the key.",
    ]
    return lines.joined(separator: "\n")
}

/// One command's help, as `defaults help <command>` and `defaults <command> --help` print it.
func help(for spec: CommandSpec) -> String {
    let usage = spec.synopses.enumerated()
        .map { index, synopsis in
            (index == 0 ? "usage: defaults " : "       defaults ") + synopsis
        }
    return (usage + ["", spec.details]).joined(separator: "\n")
}
