// `defaults-gtk-test-helper bench-window <settings.json> <rounds>`: how long a preferences window
// of 100 keys takes to build and show. Each round makes a new window of 100 new keys (25 Bool, 25
// Int with a range, 25 Double with a range, 15 String, 10 Theme) and presents it, then runs the
// main loop until GTK has painted its first frame (the time from before the first key is made to
// after that paint), and on until every row is made and painted (the page makes the rows past its
// first screen while the main loop is idle). Each round also makes the same window by hand from
// libadwaita's rows, all at once, with nothing bound (the baseline: what GTK itself costs), an
// empty preferences window (what any window costs before its rows), and the first 12 of those rows
// by hand (what GTK costs for the rows a page makes at once). Prints "round <ms> all <ms> plain
// <ms> empty <ms> screen <ms>" for each, then the medians and the medians of the rounds' ratios
// (first frame to plain, all rows to plain, first frame to the 12 rows by hand). Build it in
// release mode; needs a display (Xvfb).
import CAdw
import DefaultsAdwaita
import DefaultsGtk
import DefaultsObservation
import Foundation

func runBenchWindow(file: URL, rounds: Int) -> Never {
    gtk_init()
    GLibMainLoop.driveMainActor()
    let suite = Defaults.Suite(fileURL: file)
    // The two kinds take turns, so a machine's slow moment slows both.
    var firsts: [Double] = []
    var alls: [Double] = []
    var plain: [Double] = []
    var ratios: [Double] = []
    var allRatios: [Double] = []
    var empty: [Double] = []
    var screen: [Double] = []
    var screenRatios: [Double] = []
    for round in 0..<rounds {
        let mine = MainActor.assumeIsolated { buildAndShow(suite: suite, round: round) }
        let theirs = MainActor.assumeIsolated { buildPlain() }
        empty.append(MainActor.assumeIsolated { buildPlain(rows: 0) })
        screen.append(MainActor.assumeIsolated { buildPlain(rows: 12) })
        screenRatios.append(mine.first / screen.last!)
        firsts.append(mine.first)
        alls.append(mine.all)
        plain.append(theirs)
        ratios.append(mine.first / theirs)
        allRatios.append(mine.all / theirs)
        report(
            "round \(format(mine.first)) all \(format(mine.all)) plain \(format(theirs)) empty \(format(empty.last!))"
                + " screen \(format(screen.last!))"
        )
    }
    report(
        "median \(format(median(firsts))) all \(format(median(alls))) plain \(format(median(plain)))"
            + " empty \(format(median(empty))) screen \(format(median(screen)))"
            + " ratio \(format(median(ratios))) all \(format(median(allRatios))) screen \(format(median(screenRatios)))"
    )
    exit(0)
}

private func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
private func format(_ value: Double) -> String { String(format: "%.2f", value) }

/// Milliseconds from making the keys to the window's first painted frame, and to the first frame
/// painted once every row is made.
@MainActor
private func buildAndShow(suite: Defaults.Suite, round: Int) -> (first: Double, all: Double) {
    let start = DispatchTime.now().uptimeNanoseconds
    var rows: [PreferencesRow] = []
    for index in 0..<100 {
        let name = "r\(round).k\(index)"
        switch index % 4 {
        case 0:
            rows.append(.row(Defaults.Key<Bool>(name, default: true, suite: suite, summary: "Switch \(index)")))
        case 1:
            rows.append(
                .row(Defaults.Key<Int>(name, default: 5, suite: suite, summary: "Count \(index)", range: 0...99))
            )
        case 2:
            rows.append(
                .row(Defaults.Key<Double>(name, default: 0.5, suite: suite, summary: "Level \(index)", range: 0...1))
            )
        default:
            if index % 8 == 3 && index < 80 || index >= 80 {
                rows.append(.row(Defaults.Key<String>(name, default: "text", suite: suite, summary: "Text \(index)")))
            } else {
                rows.append(.row(Defaults.Key<Theme>(name, default: .system, suite: suite, summary: "Theme \(index)")))
            }
        }
    }
    let groups = stride(from: 0, to: 100, by: 10)
        .map { PreferencesGroup("Group \($0 / 10)", Array(rows[$0..<($0 + 10)])) }
    let window = PreferencesWindow(title: "100 keys", groups: groups)
    window.present()
    let first = painted(window.window, since: start)
    while !window.pages.allSatisfy(\.isComplete) { g_main_context_iteration(nil, 1) }
    let all = painted(window.window, since: start)
    destroy(window.window)
    return (first, all)
}

/// The same window made by hand from libadwaita's rows (the first `rows` of them: none, for what an
/// empty preferences window costs), with nothing bound: what GTK alone costs, in milliseconds to
/// its first painted frame.
@MainActor
func buildPlain(rows: Int = 100) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    let window = adw_preferences_window_new()!
    let page = adw_preferences_page_new()!
    var group: UnsafeMutablePointer<GtkWidget>?
    for index in 0..<rows {
        if index % 10 == 0 {
            group = adw_preferences_group_new()!
            adw_preferences_group_set_title(typed(group!), "Group \(index / 10)")
            adw_preferences_page_add(typed(page), typed(group!))
        }
        var row: UnsafeMutablePointer<GtkWidget>
        switch index % 4 {
        case 0:
            row = adw_action_row_new()!
            let toggle = gtk_switch_new()!
            adw_action_row_add_suffix(typed(row), toggle)
        case 1, 2:
            row = adw_action_row_new()!
            adw_action_row_add_suffix(typed(row), gtk_spin_button_new_with_range(0, 99, 1)!)
        default:
            if index % 8 == 3 && index < 80 || index >= 80 {
                row = adw_entry_row_new()!
            } else {
                row = adw_combo_row_new()!
                let model = gtk_string_list_new(nil)!
                for name in ["System", "Light", "Dark", "Solarized"] { gtk_string_list_append(model, name) }
                adw_combo_row_set_model(typed(row), model)
                g_object_unref(UnsafeMutableRawPointer(model))
            }
        }
        adw_preferences_row_set_title(typed(row), "Row \(index)")
        for _ in 0..<2 {
            let extra = gtk_button_new_from_icon_name("edit-undo-symbolic")!
            gtk_widget_set_visible(extra, 0)
            if index % 4 == 3 && (index % 8 == 3 && index < 80 || index >= 80) {
                adw_entry_row_add_suffix(typed(row), extra)
            } else {
                adw_action_row_add_suffix(typed(row), extra)
            }
        }
        adw_preferences_group_add(typed(group!), row)
    }
    adw_preferences_window_add(typed(window), typed(page))
    gtk_window_present(typed(window))
    defer { destroy(window) }
    return painted(window, since: start)
}

/// Milliseconds from `start` to `window`'s next painted frame (the frame clock's after-paint),
/// running the main loop meanwhile.
@MainActor
private func painted(_ window: UnsafeMutablePointer<GtkWidget>, since start: UInt64) -> Double {
    let painted = UnsafeMutablePointer<Bool>.allocate(capacity: 1)
    defer { painted.deallocate() }
    painted.pointee = false
    let clock = gtk_widget_get_frame_clock(window)
    let handler: @convention(c) (gpointer?, gpointer?) -> Void = { _, data in
        data!.assumingMemoryBound(to: Bool.self).pointee = true
    }
    let id = cadw_connect(
        UnsafeMutableRawPointer(clock),
        "after-paint",
        unsafeBitCast(handler, to: GCallback.self),
        painted
    )
    while !painted.pointee { g_main_context_iteration(nil, 1) }
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
    g_signal_handler_disconnect(UnsafeMutableRawPointer(clock), id)
    return elapsed
}

/// Destroys `window` and lets GTK finish with it.
@MainActor
private func destroy(_ window: UnsafeMutablePointer<GtkWidget>) {
    gtk_window_destroy(typed(window))
    while g_main_context_pending(nil) != 0 { g_main_context_iteration(nil, 0) }
}
