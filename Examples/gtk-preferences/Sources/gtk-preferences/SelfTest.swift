import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation
import Synchronization

/// `gtk-preferences --self-test <dir>`: opens the window and checks the widgets themselves,
/// through GTK's API, against changes made by another process, a hand edit, the widgets, the reset
/// buttons and the menu's actions; measures the latency from another process's `synchronize()` to
/// the spin button, beside the same through GSettings' `g_settings_bind`; prints each check and
/// `N passed, M failed` last; writes `<dir>/window.png`.
@MainActor
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

        let window = EditorWindow(printsChanges: false)
        window.present()
        // Every change of the four keys, from whichever thread: the writes that changed a value.
        let changes = ChangeCounter()
        let observation = Defaults.observe(keys: [.theme, .fontSize, .showLineNumbers, .displayName], options: []) {
            changes.add()
        }
        defer { observation.invalidate() }
        let spinValue = PropertyWatch(window.fontSizeSpin, "value")
        check(
            "the window opens, showing the defaults, and writes nothing",
            pump { gtk_widget_get_mapped(window.window) != 0 && gtk_widget_get_width(window.window) > 0 }
                && spin(window) == 12 && isOn(window) && selectedTheme(window) == .system && entryText(window).isEmpty
                && storedKeys().isEmpty
        )

        guard let child = WriteChild(["--write-child", file.path]) else {
            check("a second process starts", false)
            return finish()
        }
        child.write("fontSize", 18)
        check("a write by another process shows in the spin button", pump { spin(window) == 18 })

        editByHand { $0["showLineNumbers"] = false }
        check("a hand edit of the file turns the switch off", pump { !isOn(window) })

        adw_combo_row_set_selected(typed(window.themeRow), 2)
        try? Preferences.suite.synchronize()
        check(
            "choosing \"Dark\" in the combo row writes the key to the file",
            storedValue("theme") as? String == "dark"
        )

        gtk_editable_set_text(OpaquePointer(window.nameEntry), "Ada")
        check(
            "typing a name updates the preview label",
            pump { label(window).hasPrefix("Ada — dark, 18 pt, no line numbers") },
            detail: label(window)
        )

        gtk_widget_activate_action_variant(window.window, "prefs.theme", g_variant_new_string("solarized"))
        check(
            "the theme action (a menu's item) chooses it in the combo row",
            pump { selectedTheme(window) == .solarized }
        )
        gtk_widget_activate_action_variant(window.window, "prefs.showLineNumbers", nil)
        check("the line numbers action (a menu's item) turns the switch on", pump { isOn(window) })

        // NB: a button's activation clicks it a moment later, as a key press would.
        gtk_widget_activate(window.resetButtons["fontSize"]!)
        let fontSizeShown = pump { spin(window) == 12 }
        settle()
        try? Preferences.suite.synchronize()
        check(
            "the font size's reset button brings 12 back into the spin button and removes the key",
            fontSizeShown && !storedKeys().contains("fontSize"),
            detail: "\(storedKeys())"
        )
        gtk_widget_activate(window.resetAllButton)
        check(
            "\"Reset all\" brings every default back into the widgets",
            pump { selectedTheme(window) == .system && isOn(window) && entryText(window).isEmpty && spin(window) == 12 }
        )
        settle()
        try? Preferences.suite.synchronize()
        check(
            "\"Reset all\" leaves none of the four keys in the file",
            storedKeys().isDisjoint(with: ["theme", "fontSize", "showLineNumbers", "displayName"]),
            detail: "\(storedKeys())"
        )

        // Echoes: a widget's own write, then an outside write the widgets follow.
        let before = changes.count
        gtk_spin_button_set_value(OpaquePointer(window.fontSizeSpin), 30)
        _ = pump { label(window).contains("30 pt") }
        settle()
        // NB: on disk before the other process writes: until then this process's change would win.
        try? Preferences.suite.synchronize()
        check(
            "a spin button edit is one write, not echoed back",
            changes.count - before == 1,
            detail: "\(changes.count - before) changes"
        )
        child.write("fontSize", 31)
        // NB: the counter is told on the suite's delivery thread, maybe after the widget moved.
        _ = pump { spin(window) == 31 && changes.count - before >= 2 }
        settle()
        check(
            "an outside change moves the widget without the widget writing it back",
            changes.count - before == 2,
            detail: "\(changes.count - before) changes"
        )

        // A widget that normalises: the spin button's range ends at 72.
        gtk_spin_button_set_value(OpaquePointer(window.fontSizeSpin), 100)
        settle()
        try? Preferences.suite.synchronize()
        check(
            "the user's 100 is clamped to 72 by the spin button and written once, as 72",
            spin(window) == 72 && changes.count - before == 3 && storedValue("fontSize") as? Int == 72,
            detail: "\(changes.count - before - 2) writes, stored \(storedValue("fontSize") ?? "nothing")"
        )
        child.write("fontSize", 20)
        _ = pump { spin(window) == 20 }
        child.write("fontSize", 100)
        _ = pump { spin(window) == 72 && changes.count - before >= 5 }
        settle()
        check(
            "another process's 100 shows as 72 and the clamp is not written back",
            spin(window) == 72 && changes.count - before == 5 && storedValue("fontSize") as? Int == 100,
            detail: "\(changes.count - before) changes, stored \(storedValue("fontSize") ?? "nothing")"
        )

        // Latency: another process writes, waits for synchronize(), and says when it returned.
        let ours = measure(child: child, key: "fontSize", watch: spinValue) { spin(window) }
        child.stop()
        report(ours, "DefaultsGtk bind")
        check("200 writes by another process reach the spin button", ours.count == 200)
        check("median latency under one frame (16 ms)", median(ours) < 16, detail: "\(format(median(ours))) ms")

        // The same through GSettings: g_settings_bind on a spin button, the keyfile backend.
        if let gsettings = GSettingsComparison(folder: folder), let gChild = WriteChild(["--gsettings-child", folder]) {
            let watch = PropertyWatch(gsettings.spin, "value")
            let theirs = measure(child: gChild, key: "font-size", watch: watch) {
                Int(gtk_spin_button_get_value_as_int(OpaquePointer(gsettings.spin)))
            }
            gChild.stop()
            report(theirs, "GSettings g_settings_bind (keyfile backend)")
            check("200 GSettings writes by another process reach its spin button", theirs.count == 200)
            print(
                "median ratio, DefaultsGtk / GSettings: \(format(median(ours) / median(theirs)))"
                    + " (p99 \(format(percentile(ours, 0.99) / percentile(theirs, 0.99))))"
            )
        } else {
            print("GSettings comparison not run: glib-compile-schemas (Debian's libglib2.0-bin) is missing")
        }

        // The picture: settings as a person might leave them, drawn by the main loop first, with
        // animations off so no row is caught halfway through one.
        cadw_set_animations(0)
        window.model.theme = .solarized
        window.model.displayName = "Ada"
        window.model.fontSize = 14
        check(
            "the widgets show the view-model's own writes",
            pump { selectedTheme(window) == .solarized && entryText(window) == "Ada" && spin(window) == 14 }
        )
        settle()
        waitForFrames(of: window.window)
        let screenshot = folder + "/window.png"
        check("the window renders to \(screenshot)", window.preferences.savePicture(to: screenshot))
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

    /// Milliseconds from another process's write returning to `watch`'s property showing it, for
    /// 200 writes of values 40...59 in turn.
    private func measure(child: WriteChild, key: String, watch: PropertyWatch, shown: () -> Int) -> [Double] {
        var latencies: [Double] = []
        for round in 0..<200 {
            let value = 40 + round % 20
            let synchronized = child.write(key, value)
            guard pump({ shown() == value }) else { break }
            latencies.append(Double(Int64(watch.lastChange) - Int64(synchronized)) / 1_000_000)
        }
        return latencies
    }

    private func report(_ latencies: [Double], _ name: String) {
        let sorted = latencies.sorted()
        print(
            "latency, \(name): another process's write returning -> spin button showing the value: "
                + "median \(format(median(latencies))) ms, p99 \(format(percentile(latencies, 0.99))) ms, "
                + "max \(format(sorted.last ?? .infinity)) ms over \(latencies.count) writes"
        )
    }

    private func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

    private func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .infinity : sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
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

    /// The file's contents, read from the file itself.
    private func stored() -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(contentsOf: file))) as? [String: Any]) ?? [:]
    }

    private func storedValue(_ key: String) -> Any? { stored()[key] }

    private func storedKeys() -> Set<String> { Set(stored().keys) }
}
