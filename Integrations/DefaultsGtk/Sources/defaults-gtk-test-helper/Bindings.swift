// `defaults-gtk-test-helper bindings <settings.json>`: a GTK window whose widgets are bound to
// keys, for the tests of bindings and actions. Needs a display (Xvfb in CI).
//
// The suite's system file is system.json beside the settings file. Bound: fontSize (Int, 12) to a spin button of 6...72; showLineNumbers (Bool, true) to a switch
// and, inverted, to a "hide" check button; theme (Theme, .system) to a drop-down's position and,
// one way (.get), to a label's text; displayName (String?) to an entry; tabWidth (Int, 4) one way
// (.set) to a second spin button. Actions in group "prefs": wordWrap (Bool, false) and theme.
//
// It prints "notify <widget> <value>" each time a bound property changes, "event <key> <value>"
// for each change of a key (on the main loop, after the bindings took it in), and "ready".
// Commands, one a line; the widget commands run on the main loop and end with "ok <command>" once
// the loop has nothing left to do:
//
//     set <widget> <value>...    sets the property in turn to each value, as the user would
//     reset <key>...             Defaults.reset          resetall    every key
//     activate <action> [<s>]    activates prefs.<action> through the window
//     unbind <widget>            ends that widget's binding
//     destroy                    destroys the window
//     state                      prints "state <widget>=<value>... <action>Action=<state>
//                                <action>Enabled=<bool>...
//                                spinSensitive=<bool> bindings=<n bound> bindingObjects=<n alive>"
//     write <key> <int>          writes from a background thread   sync   synchronize()
//     exit
import CGtk
import DefaultsGtk
import DefaultsObservation
import Foundation

/// The editor's colour theme, in the drop-down's order.
enum Theme: String, CaseIterable, Defaults.Serializable {
    case system, light, dark, solarized
}

/// The bound window and its widgets; used on the main loop only.
@MainActor
final class BoundWindow {
    let suite: Defaults.Suite
    let fontSize: Defaults.Key<Int>
    let showLineNumbers: Defaults.Key<Bool>
    let theme: Defaults.Key<Theme>
    let displayName: Defaults.Key<String?>
    let tabWidth: Defaults.Key<Int>
    let wordWrap: Defaults.Key<Bool>
    var keys: [Defaults._AnyKey] { [fontSize, showLineNumbers, theme, displayName, tabWidth, wordWrap] }

    let window: UnsafeMutablePointer<GtkWidget>
    /// Each bound widget by its name in commands, with the property bound.
    var widgets: [(name: String, widget: UnsafeMutablePointer<GtkWidget>, property: String)] = []
    var bindings: [String: WeakBinding] = [:]
    let actions: UnsafeMutablePointer<GSimpleActionGroup>
    var isDestroyed = false

    struct WeakBinding {
        weak var binding: PropertyBinding?
    }

    init(file: URL) {
        suite = Defaults.Suite(
            fileURL: file,
            systemFiles: [file.deletingLastPathComponent().appendingPathComponent("system.json")]
        )
        fontSize = Defaults.Key<Int>("fontSize", default: 12, suite: suite)
        showLineNumbers = Defaults.Key<Bool>("showLineNumbers", default: true, suite: suite)
        theme = Defaults.Key<Theme>("theme", default: .system, suite: suite)
        displayName = Defaults.Key<String?>("displayName", suite: suite)
        tabWidth = Defaults.Key<Int>("tabWidth", default: 4, suite: suite)
        wordWrap = Defaults.Key<Bool>("wordWrap", default: false, suite: suite)

        window = gtk_window_new()
        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4)!
        gtk_window_set_child(typed(window), box)
        var widgets: [(name: String, widget: UnsafeMutablePointer<GtkWidget>, property: String)] = []
        func add(_ name: String, _ widget: UnsafeMutablePointer<GtkWidget>, _ property: String) {
            gtk_box_append(typed(box), widget)
            widgets.append((name, widget, property))
        }
        let names = Theme.allCases.map { strdup($0.rawValue) } + [nil]
        let dropDown = names.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!
                .withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                    gtk_drop_down_new_from_strings($0)!
                }
        }
        for name in names { free(name) }
        add("spin", gtk_spin_button_new_with_range(6, 72, 1), "value")
        add("switch", gtk_switch_new(), "active")
        add("hide", gtk_check_button_new_with_label("Hide line numbers"), "active")
        add("dropdown", dropDown, "selected")
        add("label", gtk_label_new(""), "label")
        add("entry", gtk_entry_new(), "text")
        add("tab", gtk_spin_button_new_with_range(1, 16, 1), "value")

        self.widgets = widgets
        actions = g_simple_action_group_new()!
        Defaults.addAction(for: wordWrap, to: actions)
        Defaults.addAction(for: theme, to: actions)
        gtk_widget_insert_action_group(window, "prefs", OpaquePointer(actions))
        g_object_unref(UnsafeMutableRawPointer(actions))

        for (name, widget, property) in widgets {
            listen(to: widget, property: property, name: name)
        }
        let bound: [String: PropertyBinding] = [
            "spin": Defaults.bind(fontSize, to: widget("spin"), property: "value"),
            "switch": Defaults.bind(showLineNumbers, to: widget("switch"), property: "active"),
            "hide": Defaults.bind(showLineNumbers, to: widget("hide"), property: "active", mapping: .inverted),
            "dropdown": Defaults.bind(theme, to: widget("dropdown"), property: "selected", mapping: .caseIndex),
            "label": Defaults.bind(theme, to: widget("label"), property: "label", mapping: .rawValue, flags: .get),
            "entry": Defaults.bind(displayName, to: widget("entry"), property: "text"),
            "tab": Defaults.bind(tabWidth, to: widget("tab"), property: "value", flags: .set),
        ]
        bindings = bound.mapValues { WeakBinding(binding: $0) }
        gtk_window_present(typed(window))
    }

    func widget(_ name: String) -> UnsafeMutablePointer<GtkWidget> {
        widgets.first { $0.name == name }!.widget
    }

    /// Prints "notify <name> <value>" each time the property changes.
    private func listen(to widget: UnsafeMutablePointer<GtkWidget>, property: String, name: String) {
        let context = Unmanaged.passRetained(NotifyContext(name: name, property: property)).toOpaque()
        let handler: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { object, _, data in
            let context = Unmanaged<NotifyContext>.fromOpaque(data!).takeUnretainedValue()
            report("notify \(context.name) \(propertyText(object!, context.property))")
        }
        cgtk_connect(widget, "notify::\(property)", unsafeBitCast(handler, to: GCallback.self), context)
    }

    /// Every widget's property, and the actions' states, as "name=value" words.
    func state() -> String {
        var words = isDestroyed ? [] : widgets.map { "\($0.name)=\(propertyText($0.widget, $0.property))" }
        if !isDestroyed {
            for action in ["wordWrap", "theme"] {
                let state = g_action_group_get_action_state(OpaquePointer(actions), action)!
                defer { g_variant_unref(state) }
                words.append("\(action)Action=\(String(cString: g_variant_print(state, 0)))")
                words.append(
                    "\(action)Enabled=\(g_action_group_get_action_enabled(OpaquePointer(actions), action) != 0)"
                )
            }
        }
        if !isDestroyed { words.append("spinSensitive=\(gtk_widget_get_sensitive(widget("spin")) != 0)") }
        words.append("bindings=\(bindings.values.filter { $0.binding?.isBound == true }.count)")
        words.append("bindingObjects=\(bindings.values.filter { $0.binding != nil }.count)")
        return words.joined(separator: " ")
    }

    func run(_ words: [String]) {
        switch words.first {
        case "set":
            guard let name = words.dropFirst().first else { return }
            for value in words.dropFirst(2) { setProperty(widget(name), name: name, to: value) }
        case "reset":
            Defaults.reset(words.dropFirst().compactMap { name in keys.first { $0.name == name } })
        case "resetall":
            Defaults.reset(keys)
        case "activate":
            guard words.count >= 2 else { return }
            let parameter = words.count > 2 ? g_variant_new_string(words[2]) : nil
            gtk_widget_activate_action_variant(window, "prefs.\(words[1])", parameter)
        case "unbind":
            bindings[words.dropFirst().first ?? ""]?.binding?.unbind()
        case "destroy":
            isDestroyed = true
            gtk_window_destroy(typed(window))
        case "state":
            report("state \(state())")
        default:
            report("unknown command \(words.joined(separator: " "))")
        }
    }

    /// Sets a widget's property as the user would, through the widget's own setter.
    private func setProperty(_ widget: UnsafeMutablePointer<GtkWidget>, name: String, to value: String) {
        switch name {
        case "spin", "tab": gtk_spin_button_set_value(OpaquePointer(widget), Double(value) ?? 0)
        case "switch": gtk_switch_set_active(OpaquePointer(widget), value == "true" ? 1 : 0)
        case "hide": gtk_check_button_set_active(typed(widget), value == "true" ? 1 : 0)
        case "dropdown": gtk_drop_down_set_selected(OpaquePointer(widget), UInt32(value) ?? 0)
        case "entry": gtk_editable_set_text(OpaquePointer(widget), value == "\"\"" ? "" : value)
        default: report("cannot set \(name)")
        }
    }
}

/// A widget as the GTK type a function takes, where that type is a struct Swift can see.
func typed<Widget>(_ widget: UnsafeMutablePointer<GtkWidget>) -> UnsafeMutablePointer<Widget> {
    UnsafeMutableRawPointer(widget).assumingMemoryBound(to: Widget.self)
}

/// What a notify handler prints.
final class NotifyContext {
    let name: String
    let property: String

    init(name: String, property: String) {
        self.name = name
        self.property = property
    }
}

/// A property's value as the reports print it: numbers as integers, strings as they are ("" for
/// empty).
func propertyText(_ object: gpointer, _ property: String) -> String {
    var flags: guint = 0
    switch cgtk_property_kind(object, property, &flags) {
    case CGTK_PROPERTY_BOOLEAN: return cgtk_get_boolean(object, property) != 0 ? "true" : "false"
    case CGTK_PROPERTY_FLOATING: return String(Int(cgtk_get_double(object, property).rounded()))
    case CGTK_PROPERTY_SIGNED: return String(cgtk_get_int64(object, property))
    case CGTK_PROPERTY_UNSIGNED: return String(cgtk_get_uint64(object, property))
    default:
        guard let text = cgtk_get_string(object, property) else { return "\"\"" }
        defer { g_free(text) }
        let string = String(cString: text)
        return string.isEmpty ? "\"\"" : string
    }
}

/// Runs `body` on the main loop once nothing of higher priority is left there: every delivery the
/// work before it handed over has run.
func whenSettled(_ body: @escaping @MainActor () -> Void) {
    final class Box: @unchecked Sendable {  // run once, on the main loop
        let body: @MainActor () -> Void
        init(_ body: @escaping @MainActor () -> Void) { self.body = body }
    }
    g_idle_add(
        { data in
            let box = Unmanaged<Box>.fromOpaque(data!).takeRetainedValue()
            MainActor.assumeIsolated { box.body() }
            return 0  // G_SOURCE_REMOVE
        },
        Unmanaged.passRetained(Box(body)).toOpaque()
    )
}

func runBindings(file: URL) -> Never {
    gtk_init()
    GLibMainLoop.driveMainActor()
    let bound = MainActor.assumeIsolated { BoundWindow(file: file) }
    let suite = bound.suite
    let keys = MainActor.assumeIsolated { bound.keys }
    var observations: [Defaults.Observation] = []
    // The value as the change left it, printed on the main loop after the bindings (observing
    // first, so handed over first) took the change in: a test that reads "event" and then asks
    // for the widgets' state finds them updated. Printed on the delivering thread, the line raced
    // the bindings' own hop to the main loop.
    for key in keys {
        observations.append(
            Defaults.observe(keys: [key], options: []) {
                let line = "event \(key.name) \(suite.storedValue(named: key.name)?.description ?? "(none)")"
                GLibMainLoop.deliver { report(line) }
            }
        )
    }
    withExtendedLifetime(observations) {
        runWindowCommands(suite: suite) { words in bound.run(words) }
    }
}

/// Reads a window's commands (see `readCommands`) and runs the main loop for ever.
///
/// "write <key> <int>" writes from the reading thread, any other command goes to `run` on the
/// main loop, and each ends with "ok <command>" once the loop has nothing left to do. Prints
/// "ready" first.
func runWindowCommands(suite: Defaults.Suite, _ run: @escaping @MainActor @Sendable ([String]) -> Void) -> Never {
    readCommands(suite: suite) { line, words in
        if words.first == "write" {
            if words.count == 3, let value = Int(words[2]) {
                suite[Defaults.Key<Int>(words[1], default: 0, suite: suite)] = value
            }
            report("ok \(line)")
        } else {
            GLibMainLoop.deliver {
                run(words)
                whenSettled { report("ok \(line)") }
            }
        }
    }
    GLibMainLoop.deliver { whenSettled { report("ready") } }
    while true {
        g_main_context_iteration(nil, 1)
    }
}

/// Makes one mistake with a GObject (a `GSimpleAction`, so no display is needed), which stops the
/// program: a property it does not have, a property that cannot hold the key's value, or an
/// action added to something that is not an action map.
@MainActor
func misbind(_ mistake: String, file: URL) -> Never {
    let suite = Defaults.Suite(fileURL: file)
    let object = g_simple_action_new("object", nil)!
    switch mistake {
    case "misbind-property":
        Defaults.bind(Defaults.Key<Int>("fontSize", default: 12, suite: suite), to: object, property: "valu")
    case "misbind-type":
        Defaults.bind(Defaults.Key<String>("title", default: "", suite: suite), to: object, property: "enabled")
    default:
        Defaults.addAction(for: Defaults.Key<Bool>("wordWrap", default: false, suite: suite), to: object)
    }
    report("no mistake found")
    exit(0)
}
