import Foundation
import Testing

/// The helper's window of bound widgets (see the helper's Bindings.swift) on an X server of its
/// own, driven by commands; widgets are read back through GTK's API in the helper.
final class BoundWindowSession {
    let directory: URL
    let file: URL
    private let display: VirtualDisplay
    private let program: RunningProgram

    /// Starts the helper's `mode` (its window of bound widgets, or `preferences`), with
    /// `environment` and `arguments` after its own, after `prepare` wrote what it wants in the
    /// folder.
    ///
    /// With `suiteName`, the helper opens the suite by that name (its file then where
    /// `$XDG_CONFIG_HOME` in `environment` puts it), not the folder's `settings.json`.
    init(
        mode: String = "bindings",
        suiteName: String? = nil,
        environment: [String: String] = [:],
        arguments: [String] = [],
        prepare: (URL) throws -> Void = { _ in }
    ) async throws {
        directory = try makeTemporaryFolder()
        file =
            suiteName.map { name in
                URL(fileURLWithPath: environment["XDG_CONFIG_HOME"]!).appendingPathComponent("\(name)/settings.json")
            } ?? directory.appendingPathComponent("settings.json")
        try prepare(directory)
        display = try VirtualDisplay()
        program = try RunningProgram(
            "defaults-gtk-test-helper",
            [mode, suiteName ?? file.path] + arguments,
            environment: environment.merging(["DISPLAY": display.name, "GDK_BACKEND": "x11"]) { $1 }
        )
        let start = await program.lines { $0.contains("ready") }
        #expect(start.contains("ready"), "the window opens: \(start)")
        opening = start
    }

    /// What the helper printed up to "ready".
    private(set) var opening: [String] = []

    func close() {
        program.stop()
        display.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs a command on the main loop; returns what was printed until the loop had nothing left.
    @discardableResult
    func run(_ command: String) async -> [String] {
        program.send(command)
        let lines = await program.lines { $0.contains("ok \(command)") }
        #expect(lines.contains("ok \(command)"), "\(command): \(lines)")
        return lines
    }

    /// Waits until `line` was printed; returns what was.
    func lines(until line: String) async -> [String] {
        let seen = await program.lines { $0.contains(line) }
        #expect(seen.contains(line), "waiting for \(line): \(seen)")
        return seen
    }

    /// The first line printed that starts with `prefix`, from the opening on; waits for it.
    func line(startingWith prefix: String) async -> String? {
        if let line = opening.first(where: { $0.hasPrefix(prefix) }) { return line }
        let seen = await program.lines { $0.contains { $0.hasPrefix(prefix) } }
        return seen.first { $0.hasPrefix(prefix) }
    }

    /// Every widget's property and action state, by name.
    func state() async -> [String: String] {
        let lines = await run("state")
        let words = lines.first { $0.hasPrefix("state ") }?.split(separator: " ").dropFirst() ?? []
        return Dictionary(
            words.compactMap { word in
                let parts = word.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            },
            uniquingKeysWith: { $1 }
        )
    }

    /// Runs `defaults` in another process; then waits until `line` was printed (the window's
    /// reaction) and the main loop has nothing left; returns what was printed.
    func outside(_ arguments: [String], until line: String) async throws -> [String] {
        let status = try await runDefaults(arguments.prefix(1) + [file.path] + arguments.dropFirst())
        #expect(status == 0, "defaults \(arguments)")
        let seen = await program.lines { $0.contains(line) }
        #expect(seen.contains(line), "after defaults \(arguments): \(seen)")
        return seen + (await run("state"))
    }

    /// The settings file's keys and values, once this program's writes are on disk.
    func stored() async throws -> [String: Any] {
        program.send("sync")
        _ = await program.lines { $0.contains("synced") }
        guard FileManager.default.fileExists(atPath: file.path) else { return [:] }
        return try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any] ?? [:]
    }

    /// The values of `key`'s changes printed in `lines` ("(none)" for a removal), in order.
    static func events(of key: String, in lines: [String]) -> [String] {
        lines.compactMap { line in
            line.hasPrefix("event \(key) ") ? String(line.dropFirst("event \(key) ".count)) : nil
        }
    }

    /// Every key's changes printed in `lines`.
    static func events(in lines: [String]) -> [String] {
        lines.filter { $0.hasPrefix("event ") }
    }

    /// The values `widget`'s bound property took, printed in `lines`.
    static func notifications(of widget: String, in lines: [String]) -> [String] {
        lines.compactMap { line in
            line.hasPrefix("notify \(widget) ") ? String(line.dropFirst("notify \(widget) ".count)) : nil
        }
    }
}

/// Keys bound to widgets' properties, both ways and one way, through mappings, and as actions:
/// every change in each direction is exactly one write and one event, and nothing echoes.
@Suite struct BindingTests {
    @Test func aWidgetShowsItsKeyAndTheUsersChangeIsOneWriteNotEchoed() async throws {
        let session = try await BoundWindowSession()
        defer { session.close() }
        let start = await session.state()
        #expect(start["spin"] == "12" && start["switch"] == "true" && start["hide"] == "false", "\(start)")
        #expect(start["dropdown"] == "0" && start["label"] == "system" && start["entry"] == "\"\"", "\(start)")
        #expect(start["bindings"] == "7", "\(start)")
        #expect(try await session.stored().isEmpty, "binding writes nothing")

        // Each widget set as the user would: one event each, and the widget's property changed once.
        var lines = await session.run("set spin 30")
        #expect(BoundWindowSession.events(in: lines) == ["event fontSize 30"], "\(lines)")
        #expect(BoundWindowSession.notifications(of: "spin", in: lines) == ["30"], "\(lines)")

        lines = await session.run("set switch false")
        #expect(BoundWindowSession.events(in: lines) == ["event showLineNumbers false"], "\(lines)")
        // The inverted check button follows, and does not write back.
        #expect(BoundWindowSession.notifications(of: "hide", in: lines) == ["true"], "\(lines)")
        lines = await session.run("set hide false")
        #expect(BoundWindowSession.events(in: lines) == ["event showLineNumbers true"], "\(lines)")
        #expect(BoundWindowSession.notifications(of: "switch", in: lines) == ["true"], "\(lines)")

        // An enum through the drop-down's position; the label follows it one way.
        lines = await session.run("set dropdown 2")
        #expect(BoundWindowSession.events(in: lines) == ["event theme \"dark\""], "\(lines)")
        #expect(BoundWindowSession.notifications(of: "label", in: lines) == ["dark"], "\(lines)")

        // Typing: three writes, and the entry is never set back to an earlier text.
        lines = await session.run("set entry A Ad Ada")
        #expect(
            BoundWindowSession.events(in: lines) == [
                "event displayName \"A\"", "event displayName \"Ad\"", "event displayName \"Ada\"",
            ],
            "\(lines)"
        )
        #expect(BoundWindowSession.notifications(of: "entry", in: lines) == ["A", "Ad", "Ada"], "\(lines)")

        // One way, the widget to the key: the key follows the widget, not the other way.
        lines = await session.run("set tab 8")
        #expect(BoundWindowSession.events(in: lines) == ["event tabWidth 8"], "\(lines)")

        var stored = try await session.stored()
        #expect(stored["fontSize"] as? Int == 30 && stored["showLineNumbers"] as? Bool == true, "\(stored)")
        #expect(stored["theme"] as? String == "dark" && stored["displayName"] as? String == "Ada", "\(stored)")
        #expect(stored["tabWidth"] as? Int == 8, "\(stored)")

        // An emptied entry is nil: the key is removed.
        lines = await session.run("set entry \"\"")
        #expect(BoundWindowSession.events(in: lines) == ["event displayName (none)"], "\(lines)")
        stored = try await session.stored()
        #expect(stored["displayName"] == nil, "\(stored)")

        lines = try await session.outside(["write", "tabWidth", "2"], until: "event tabWidth 2")
        #expect(await session.state()["tab"] == "8", "a .set binding does not follow the key")
        #expect(BoundWindowSession.notifications(of: "tab", in: lines).isEmpty, "\(lines)")
    }

    @Test func anotherProcesssWritesMoveTheWidgetsAndAreNotWrittenBack() async throws {
        let session = try await BoundWindowSession()
        defer { session.close() }
        _ = await session.state()

        var lines = try await session.outside(["write", "fontSize", "18"], until: "notify spin 18")
        #expect(BoundWindowSession.events(in: lines) == ["event fontSize 18"], "\(lines)")

        lines = try await session.outside(["write", "theme", "\"light\""], until: "notify label light")
        #expect(BoundWindowSession.events(in: lines) == ["event theme \"light\""], "\(lines)")
        #expect(BoundWindowSession.notifications(of: "dropdown", in: lines) == ["1"], "\(lines)")
        #expect((await session.state())["themeAction"] == "'light'")

        lines = try await session.outside(["write", "showLineNumbers", "false"], until: "notify hide true")
        #expect(BoundWindowSession.events(in: lines) == ["event showLineNumbers false"], "\(lines)")
        #expect(BoundWindowSession.notifications(of: "switch", in: lines) == ["false"], "\(lines)")

        lines = try await session.outside(["write", "displayName", "\"Grace\""], until: "notify entry Grace")
        #expect(BoundWindowSession.events(in: lines) == ["event displayName \"Grace\""], "\(lines)")

        // A widget that normalises: the spin button clamps 100 to its upper bound, 72. The store
        // keeps what was written; the clamp is not written back.
        lines = try await session.outside(["write", "fontSize", "100"], until: "notify spin 72")
        #expect(BoundWindowSession.events(in: lines) == ["event fontSize 100"], "\(lines)")
        #expect(try await session.stored()["fontSize"] as? Int == 100)

        // The user's 100 is clamped before it is written: one write, of 72, and no loop.
        _ = await session.run("set spin 50")
        lines = await session.run("set spin 100")
        #expect(BoundWindowSession.events(in: lines) == ["event fontSize 72"], "\(lines)")
        #expect(BoundWindowSession.notifications(of: "spin", in: lines) == ["72"], "\(lines)")
        #expect(try await session.stored()["fontSize"] as? Int == 72)
    }

    @Test func actionsFollowTheKeyAndWriteIt() async throws {
        let session = try await BoundWindowSession()
        defer { session.close() }
        var state = await session.state()
        #expect(state["wordWrapAction"] == "false" && state["themeAction"] == "'system'", "\(state)")

        _ = try await session.outside(["write", "wordWrap", "true"], until: "event wordWrap true")
        #expect((await session.state())["wordWrapAction"] == "true")

        // A Bool action toggles.
        var lines = await session.run("activate wordWrap")
        #expect(BoundWindowSession.events(in: lines) == ["event wordWrap false"], "\(lines)")
        #expect(try await session.stored()["wordWrap"] as? Bool == false)

        // An enum action takes a case's raw value; the drop-down bound to the same key follows.
        lines = await session.run("activate theme solarized")
        #expect(BoundWindowSession.events(in: lines) == ["event theme \"solarized\""], "\(lines)")
        #expect(BoundWindowSession.notifications(of: "dropdown", in: lines) == ["3"], "\(lines)")
        // A name that is no case changes nothing.
        lines = await session.run("activate theme purple")
        #expect(BoundWindowSession.events(in: lines).isEmpty, "\(lines)")
        state = await session.state()
        #expect(state["themeAction"] == "'solarized'" && state["wordWrapAction"] == "false", "\(state)")
        #expect(try await session.stored()["theme"] as? String == "solarized")
    }

    @Test func resetRemovesTheKeysAndTheWidgetsShowTheDefaults() async throws {
        let session = try await BoundWindowSession()
        defer { session.close() }
        for command in ["set spin 30", "set switch false", "set dropdown 3", "set entry Ada", "activate wordWrap"] {
            await session.run(command)
        }
        #expect(try await session.stored().count == 5)

        var lines = await session.run("reset fontSize")
        #expect(BoundWindowSession.events(in: lines) == ["event fontSize (none)"], "\(lines)")
        #expect(BoundWindowSession.notifications(of: "spin", in: lines) == ["12"], "\(lines)")
        #expect(try await session.stored()["fontSize"] == nil)

        lines = await session.run("resetall")
        // One event per key that had a value, and none from the widgets that follow.
        #expect(
            Set(BoundWindowSession.events(in: lines)) == [
                "event showLineNumbers (none)", "event theme (none)", "event displayName (none)",
                "event wordWrap (none)",
            ],
            "\(lines)"
        )
        #expect(BoundWindowSession.events(in: lines).count == 4, "\(lines)")
        let state = await session.state()
        #expect(state["spin"] == "12" && state["switch"] == "true" && state["hide"] == "false", "\(state)")
        #expect(state["dropdown"] == "0" && state["entry"] == "\"\"" && state["wordWrapAction"] == "false", "\(state)")
        let stored = try await session.stored()
        #expect(stored.isEmpty, "Reset all leaves no key in the file: \(stored)")
    }

    @Test func aBindingEndsWithUnbindAndWithItsWidget() async throws {
        let session = try await BoundWindowSession()
        defer { session.close() }
        _ = await session.state()

        _ = await session.run("unbind spin")
        #expect((await session.state())["bindings"] == "6")
        var lines = await session.run("set spin 20")
        #expect(BoundWindowSession.events(in: lines).isEmpty, "\(lines)")
        lines = try await session.outside(["write", "fontSize", "40"], until: "event fontSize 40")
        #expect(BoundWindowSession.notifications(of: "spin", in: lines).isEmpty, "\(lines)")

        // The window destroyed: every binding ended and was let go; later changes reach nothing.
        _ = await session.run("destroy")
        let state = await session.state()
        #expect(state["bindings"] == "0" && state["bindingObjects"] == "0", "\(state)")
        lines = try await session.outside(["write", "theme", "\"dark\""], until: "event theme \"dark\"")
        #expect(!lines.contains { $0.hasPrefix("notify") }, "\(lines)")
        #expect((await session.state())["bindingObjects"] == "0")
    }
}

/// A mistake in a binding stops the program at once, with a message that names the object's type,
/// the property and the key, and writes nothing.
@Suite struct BindingMistakeTests {
    @Test(arguments: [
        ("misbind-property", "Defaults.bind: GSimpleAction's property \"valu\" does not exist (key \"fontSize\")"),
        (
            "misbind-type",
            "Defaults.bind: GSimpleAction's property \"enabled\" cannot hold the key's value, a string (key \"title\")"
        ),
        ("misbind-action-map", "Defaults.addAction: GSimpleAction is not a GActionMap (key \"wordWrap\")"),
    ])
    func aMistakeStopsTheProgramWithAMessage(mistake: String, message: String) async throws {
        let directory = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("settings.json")
        let process = Process()
        process.executableURL = builtProduct("defaults-gtk-test-helper")
        process.arguments = [mistake, file.path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "\(text)")
        #expect(text.contains(message), "\(text)")
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }
}

/// A key a system file locks: the widget bound to it is insensitive and shows the locked value.
///
/// A change made anyway (through the widget's API) is refused and the widget goes back; lifting
/// the lock makes it sensitive again. As GSettings does for a key that is not writable.
@Suite struct BindingLockTests {
    @Test func aLockedKeysWidgetIsInsensitiveAndShowsTheLockedValue() async throws {
        let session = try await BoundWindowSession()
        defer { session.close() }
        var state = await session.state()
        #expect(state["spinSensitive"] == "true", "\(state)")
        _ = await session.run("set spin 30")

        let system = session.directory.appendingPathComponent("system.json")
        try Data(#"{ "": { "locked": ["fontSize"] }, "fontSize": 20 }"#.utf8).write(to: system)
        _ = await session.lines(until: "notify spin 20")
        state = await session.state()
        #expect(state["spin"] == "20" && state["spinSensitive"] == "false", "\(state)")

        // The user's change is refused: nothing is written, and the spin button goes back to 20.
        let lines = await session.run("set spin 40")
        #expect(BoundWindowSession.events(in: lines).isEmpty, "\(lines)")
        #expect(BoundWindowSession.notifications(of: "spin", in: lines) == ["40", "20"], "\(lines)")
        #expect(try await session.stored()["fontSize"] as? Int == 30, "the user's value stays in the file")

        // The lock lifted: the user's value is back, and the widget can be used again.
        try Data(#"{ "fontSize": 20 }"#.utf8).write(to: system)
        _ = await session.lines(until: "notify spin 30")
        state = await session.state()
        #expect(state["spin"] == "30" && state["spinSensitive"] == "true", "\(state)")
    }

    /// A lock added or lifted at the value the key already holds changes no value, and still
    /// reaches the widget and the action at once, as GSettings' writable-changed does.
    @Test func aLockAtTheSameValueReachesTheWidgetAndTheActionAtOnce() async throws {
        let session = try await BoundWindowSession()
        defer { session.close() }
        var state = await session.state()
        #expect(state["spinSensitive"] == "true" && state["wordWrapEnabled"] == "true", "\(state)")
        let system = session.directory.appendingPathComponent("system.json")
        try Data(#"{ "": { "locked": ["fontSize", "wordWrap"] }, "fontSize": 12, "wordWrap": false }"#.utf8)
            .write(to: system, options: .atomic)
        _ = await session.lines(until: "event wordWrap false")
        state = await session.state()
        #expect(state["spin"] == "12" && state["spinSensitive"] == "false", "\(state)")
        #expect(state["wordWrapAction"] == "false" && state["wordWrapEnabled"] == "false", "\(state)")

        try Data(#"{ "fontSize": 12, "wordWrap": false }"#.utf8).write(to: system, options: .atomic)
        _ = await session.lines(until: "event wordWrap false")
        state = await session.state()
        #expect(state["spinSensitive"] == "true" && state["wordWrapEnabled"] == "true", "\(state)")
    }
}
