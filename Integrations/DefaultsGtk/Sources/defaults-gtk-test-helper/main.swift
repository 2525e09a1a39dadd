// A GTK program for the tests of DefaultsGtk: GLib's main loop runs on the main thread, and every
// kind of observer reports, on standard output, each value it was given and the thread it ran on.
// (`defaults-gtk-test-helper bindings <settings.json>` runs a window of bound widgets instead:
// see Bindings.swift; `misbind-property`, `misbind-type` and `misbind-action-map` make the mistake
// they name, which stops the program with a message.)
//
//     defaults-gtk-test-helper delivery <settings.json>
//
// Observers of the key "fontSize" (an Int): `observeOnMainLoop(_:)`, `observeOnMainLoop(keys:)`,
// an `updates` loop in a `@MainActor` task, `withObservationTracking` on an `@Observable`
// view-model (its `onChange` handing over to the main loop), `Observations` over that view-model
// in a `@MainActor` task, and `observeOnMainLoop(keys:debounce:)`. Each prints
// "<kind> <value> <main|other>". Then "ready". Commands, one a line on standard input, run on a
// thread of their own (not the main loop's):
//
//     write <n>...    writes each n in a row     quiet <n>    writes n in withoutPropagation
//     sync            synchronize(), then prints "synced"
//     exit            exits from the main loop
import CGtk
import DefaultsGtk
import DefaultsObservation
import Foundation
import Observation

/// Writes `line` at once, for the test reading the pipe.
///
/// Straight to the descriptor, not `print` and `fflush(nil)`: that flushes standard input too,
/// whose lock the thread reading commands holds while it waits for a line, so the main loop
/// stopped until one came.
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Reads commands, one a line on standard input, on a thread of its own (not the main loop's).
///
/// "sync" (synchronize, then "synced") and "exit" (from the main loop) are every mode's; the rest
/// go to `handle` with the line's words. The end of the input exits too.
func readCommands(suite: Defaults.Suite, _ handle: @escaping @Sendable (String, [String]) -> Void) {
    Thread.detachNewThread {
        while let line = readLine() {
            let words = line.split(separator: " ").map(String.init)
            switch words.first {
            case "sync":
                try? suite.synchronize()
                report("synced")
            case "exit":
                GLibMainLoop.deliver { exit(0) }
            default:
                handle(line, words)
            }
        }
        GLibMainLoop.deliver { exit(0) }
    }
}

/// Which thread this is, as the report says it.
func threadName() -> String { Thread.isMainThread ? "main" : "other" }

/// A view-model with one setting, as a GTK window's would have.
@Observable
final class EditorModel: @unchecked Sendable {  // the wrapper is set once; values live in the store
    @ObservationIgnored @ObservableDefault<Int> var fontSize: Int

    init(key: Defaults.Key<Int>) {
        _fontSize = ObservableDefault(key)
    }
}

let arguments = CommandLine.arguments
let modes = ["delivery", "bindings", "preferences", "editor", "misbind-property", "misbind-type", "misbind-action-map"]
if arguments.count == 4, arguments[1] == "bench-window", let rounds = Int(arguments[3]) {
    runBenchWindow(file: URL(fileURLWithPath: arguments[2]), rounds: rounds)
}
// Only `preferences` takes more: launch arguments that override its keys.
guard arguments.count == 3 || arguments.count > 3 && arguments[1] == "preferences", modes.contains(arguments[1]) else {
    FileHandle.standardError.write(
        Data("usage: defaults-gtk-test-helper \(modes.joined(separator: "|")) <settings.json>\n".utf8)
    )
    exit(2)
}
if arguments[1] == "bindings" {
    runBindings(file: URL(fileURLWithPath: arguments[2]))
}
if arguments[1] == "preferences" || arguments[1] == "editor" {
    runPreferences(address: arguments[2], editing: arguments[1] == "editor")
}
if arguments[1].hasPrefix("misbind-") {
    misbind(arguments[1], file: URL(fileURLWithPath: arguments[2]))
}
GLibMainLoop.driveMainActor()
let suite = Defaults.Suite(fileURL: URL(fileURLWithPath: arguments[2]))
let fontSize = Defaults.Key<Int>("fontSize", default: 12, suite: suite)
let theme = Defaults.Key<String>("theme", default: "system", suite: suite)
let model = EditorModel(key: fontSize)

let observation = Defaults.observeOnMainLoop(fontSize, options: []) { change in
    report("observe \(change.newValue) \(threadName())")
}
let keysObservation = Defaults.observeOnMainLoop(keys: [fontSize, theme], options: []) {
    report("observe(keys:) \(suite[fontSize]) \(threadName())")
}
let debounced = Defaults.observeOnMainLoop(keys: [fontSize], debounce: .milliseconds(300)) { _ in
    report("debounced \(suite[fontSize]) \(threadName())")
}
let updates = Task { @MainActor in
    for await value in Defaults.updates(fontSize, initial: false) {
        report("updates \(value) \(threadName())")
    }
}

/// Arms one round of tracking; the change hands over to the main loop, which reports and re-arms.
@Sendable func track() {
    withObservationTracking {
        _ = model.fontSize
    } onChange: {
        GLibMainLoop.deliver {
            report("tracking \(model.fontSize) \(threadName())")
            track()
        }
    }
}
track()
let observations = Task { @MainActor in
    for await value in Observations({ model.fontSize }) {
        report("Observations \(value) \(threadName())")
    }
}

readCommands(suite: suite) { line, words in
    switch words.first {
    case "write":
        for value in words.dropFirst().compactMap(Int.init) { suite[fontSize] = value }
    case "quiet":
        if let value = words.dropFirst().first.flatMap(Int.init) {
            Defaults.withoutPropagation { suite[fontSize] = value }
        }
    default:
        report("unknown command \(line)")
    }
}

// The main loop reports itself ready from inside, once it runs.
GLibMainLoop.deliver { report("ready") }
while true {
    g_main_context_iteration(nil, 1)
}
