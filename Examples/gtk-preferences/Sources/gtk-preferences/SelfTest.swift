import CGtk
import DefaultsObservation
import Foundation
import Synchronization

/// `gtk-preferences --self-test <dir>`: opens the window and checks the widgets themselves,
/// through GTK's API, against changes made by another process, a hand edit, the widgets and the
/// reset buttons; prints each check, the latency from another process's `synchronize()` to the
/// spin button, and `N passed, M failed` last; writes `<dir>/window.png`.
struct SelfTest {
    let folder: String
    private var passed = 0
    private var failed = 0

    init(folder: String) {
        self.folder = folder
    }

    private var file: URL { Preferences.selfTestFile(in: folder) }

    mutating func run() -> Int32 {
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        Defaults.removeAll(suite: Preferences.suite)
        try? Preferences.suite.synchronize()
        // Wakes the loop below every 20 ms, so a deadline is noticed while nothing else happens.
        g_timeout_add(20, { _ in 1 }, nil)

        let window = PreferencesWindow(model: PreferencesModel(), printsChanges: false)
        window.present()
        check(
            "the window opens, showing the defaults",
            pump { gtk_widget_get_mapped(window.window) != 0 && gtk_widget_get_width(window.window) > 0 }
                && spin(window) == 12 && isOn(window) && selectedTheme(window) == .system && window.entryText.isEmpty
        )

        guard let child = WriteChild(file: file) else {
            check("a second process starts", false)
            return finish()
        }
        child.write("fontSize", 18)
        check("a write by another process shows in the spin button", pump { spin(window) == 18 })

        editByHand { $0["showLineNumbers"] = false }
        check("a hand edit of the file turns the switch off", pump { !isOn(window) })

        gtk_drop_down_set_selected(OpaquePointer(window.themeDropDown), 2)
        try? Preferences.suite.synchronize()
        check(
            "choosing \"dark\" in the drop-down writes the key to the file",
            storedValue("theme") as? String == "dark"
        )

        gtk_editable_set_text(OpaquePointer(window.nameEntry), "Ada")
        check(
            "typing a name updates the preview label",
            pump { label(window).hasPrefix("Ada — dark, 18 pt, no line numbers") },
            detail: label(window)
        )

        gtk_widget_activate(window.resetButtons["fontSize"]!)
        check("the font size's reset button brings 12 back into the spin button", pump { spin(window) == 12 })
        gtk_widget_activate(window.resetAllButton)
        check(
            "\"Reset all\" brings every default back into the widgets",
            pump { selectedTheme(window) == .system && isOn(window) && window.entryText.isEmpty }
        )

        // Echoes: a widget's own write, then an outside write the widgets follow.
        let changes = ChangeCounter()
        let observation = Defaults.observe(.fontSize, options: []) { _ in changes.add() }
        let writesBefore = window.widgetWrites
        gtk_spin_button_set_value(OpaquePointer(window.fontSizeSpin), 30)
        _ = pump { label(window).contains("30 pt") }
        settle()
        // NB: on disk before the other process writes: until then this process's change would win.
        try? Preferences.suite.synchronize()
        check(
            "a spin button edit is one write and one change, not echoed back",
            window.widgetWrites - writesBefore == 1 && changes.count == 1,
            detail: "widget writes \(window.widgetWrites - writesBefore), changes \(changes.count)"
        )
        child.write("fontSize", 31)
        // NB: the observer above is told on the suite's delivery thread, maybe after the widget moved.
        _ = pump { spin(window) == 31 && changes.count >= 2 }
        settle()
        check(
            "an outside change moves the widget without the widget writing it back",
            window.widgetWrites - writesBefore == 1 && changes.count == 2,
            detail: "widget writes \(window.widgetWrites - writesBefore), changes \(changes.count)"
        )
        observation.invalidate()

        // Latency: another process writes, waits for synchronize(), and says when it returned.
        var latencies: [Double] = []
        for round in 0..<50 {
            let value = 40 + round % 20
            let synchronized = child.write("fontSize", value)
            guard pump({ spin(window) == value }), let followed = window.lastFollowed["fontSize"] else { break }
            latencies.append(Double(Int64(followed) - Int64(synchronized)) / 1_000_000)
        }
        child.stop()
        let sorted = latencies.sorted()
        let median = sorted.isEmpty ? .infinity : sorted[sorted.count / 2]
        check("50 writes by another process reach the spin button", latencies.count == 50)
        print(
            "latency, another process's synchronize() returning -> spin button showing the value: "
                + "median \(format(median)) ms, max \(format(sorted.last ?? .infinity)) ms over \(latencies.count) writes "
                + "(negative: the widget showed it before synchronize() returned)"
        )
        check("median latency under one frame (16 ms)", median < 16, detail: "\(format(median)) ms")

        // The picture: settings as a person might leave them, drawn by the main loop first.
        window.model.theme = .solarized
        window.model.displayName = "Ada"
        window.model.fontSize = 14
        check(
            "the widgets show the view-model's own writes",
            pump { selectedTheme(window) == .solarized && window.entryText == "Ada" && spin(window) == 14 }
        )
        settle()
        waitForFrames(of: window.window)
        let screenshot = folder + "/window.png"
        check("the window renders to \(screenshot)", cgtk_save_png(window.window, screenshot) != 0)
        gtk_window_destroy(typed(window.window))
        return finish()
    }

    // MARK: - Checks

    private mutating func check(_ name: String, _ ok: Bool, detail: String = "") {
        if ok {
            passed += 1
            print("PASS \(name)")
        } else {
            failed += 1
            print("FAIL \(name)" + (detail.isEmpty ? "" : ": \(detail)"))
        }
        fflush(nil)
    }

    private func finish() -> Int32 {
        print("\(passed) passed, \(failed) failed")
        return failed == 0 ? 0 : 1
    }

    /// Runs GTK's main loop until `condition` holds; `false` if it did not within five seconds.
    private func pump(_ condition: () -> Bool) -> Bool {
        let deadline = monotonicNanoseconds() + 5_000_000_000
        while !condition() {
            if monotonicNanoseconds() > deadline { return false }
            g_main_context_iteration(nil, 1)
        }
        return true
    }

    /// Runs what the main loop has ready, and what that makes ready, until nothing is left.
    private func settle() {
        while g_main_context_pending(nil) != 0 { g_main_context_iteration(nil, 0) }
    }

    /// Runs the main loop until GTK has drawn `widget` twice more, so a picture shows it as it is.
    private func waitForFrames(of widget: UnsafeMutablePointer<GtkWidget>) {
        let frames = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        defer { frames.deallocate() }
        frames.pointee = 0
        let tick = gtk_widget_add_tick_callback(
            widget,
            { _, _, data in
                data!.assumingMemoryBound(to: Int.self).pointee += 1
                return 1  // G_SOURCE_CONTINUE
            },
            frames,
            nil
        )
        gtk_widget_queue_draw(widget)
        _ = pump { frames.pointee >= 2 }
        gtk_widget_remove_tick_callback(widget, tick)
    }

    private func format(_ milliseconds: Double) -> String {
        String(format: "%.2f", milliseconds)
    }

    /// Changes the file the way a person's editor does: a new file renamed over the old one.
    private func editByHand(_ change: (inout [String: Any]) -> Void) {
        var object = (try? JSONSerialization.jsonObject(with: Data(contentsOf: file))) as? [String: Any] ?? [:]
        change(&object)
        let saved = file.deletingLastPathComponent().appendingPathComponent(".settings.json.swp")
        try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted]).write(to: saved)
        rename(saved.path, file.path)
    }

    /// The value stored under `key` in the file, read from the file itself.
    private func storedValue(_ key: String) -> Any? {
        ((try? JSONSerialization.jsonObject(with: Data(contentsOf: file))) as? [String: Any])?[key]
    }
}

// MARK: - Reading the widgets

private func spin(_ window: PreferencesWindow) -> Int {
    Int(gtk_spin_button_get_value_as_int(OpaquePointer(window.fontSizeSpin)))
}

private func isOn(_ window: PreferencesWindow) -> Bool {
    gtk_switch_get_active(OpaquePointer(window.lineNumbersSwitch)) != 0
}

private func selectedTheme(_ window: PreferencesWindow) -> Theme? {
    let index = Int(gtk_drop_down_get_selected(OpaquePointer(window.themeDropDown)))
    return Theme.allCases.indices.contains(index) ? Theme.allCases[index] : nil
}

private func label(_ window: PreferencesWindow) -> String {
    String(cString: gtk_label_get_text(OpaquePointer(window.previewLabel)))
}

/// Counts change callbacks, from whichever thread.
private final class ChangeCounter: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

// MARK: - The other process

/// This program run as `--write-child <file>`: another process that writes the settings file.
private final class WriteChild {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    init?(file: URL) {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--write-child", file.path]
        process.standardInput = input
        process.standardOutput = output
        do { try process.run() } catch { return nil }
    }

    /// Asks the child to write `value` to `key` and synchronize; returns when `synchronize()`
    /// returned there (`CLOCK_MONOTONIC` nanoseconds).
    @discardableResult
    func write(_ key: String, _ value: Int) -> UInt64 {
        input.fileHandleForWriting.write(Data("\(key) \(value)\n".utf8))
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return 0 }
            line += chunk
        }
        let words = String(decoding: line, as: UTF8.self).split(separator: " ")
        return words.count == 2 ? UInt64(words[1].trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 : 0
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// The child's side of ``WriteChild``.
///
/// Reads `<key> <int>` lines, writes each and synchronizes, and answers
/// `synced <CLOCK_MONOTONIC ns>` once `synchronize()` returned. Exits at the end of its input.
func runWriteChild(file: URL) -> Never {
    let suite = Defaults.Suite(fileURL: file)
    while let line = readLine() {
        let words = line.split(separator: " ")
        guard words.count == 2, let value = Int(words[1]) else { continue }
        suite[Defaults.Key<Int>(String(words[0]), default: 0, suite: suite)] = value
        try? suite.synchronize()
        print("synced \(monotonicNanoseconds())")
        fflush(nil)
    }
    exit(0)
}
