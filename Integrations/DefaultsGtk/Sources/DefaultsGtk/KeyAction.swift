import CGtk
import DefaultsObservation

/// A key's value as the state of a `GSimpleAction`, and the action's changes written to the key.
///
/// Made by `Defaults.addAction(for:to:)`; lasts as long as the action.
@MainActor
private final class KeyAction {
    private let action: OpaquePointer
    private let requested: (OpaquePointer) -> Void
    private var observation: Defaults.Observation?
    private var retained: Unmanaged<KeyAction>?

    init<Value: Defaults.Serializable>(
        key: Defaults.Key<Value>,
        name: String,
        parameterType: OpaquePointer?,
        toState: @escaping (Value) -> OpaquePointer,
        fromState: @escaping (OpaquePointer) -> Value?
    ) {
        GLibMainLoop.driveMainActor()
        let action = g_simple_action_new_stateful(name, parameterType, toState(Defaults[key]))!
        self.action = action
        requested = { state in
            // A state that is no value of the key (an unknown case's name) changes nothing.
            guard let value = fromState(state) else { return }
            Defaults[key] = value
            g_simple_action_set_state(action, toState(Defaults[key]))
        }
        retained = Unmanaged.passRetained(self)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let changeState: @convention(c) (gpointer?, OpaquePointer?, gpointer?) -> Void = { _, state, data in
            let binding = Int(bitPattern: data)
            let state = Int(bitPattern: state)
            MainActor.assumeIsolated {
                unretainedObject(at: binding, as: KeyAction.self).requested(OpaquePointer(bitPattern: state)!)
            }
        }
        cgtk_connect(
            UnsafeMutableRawPointer(action),
            "change-state",
            unsafeBitCast(changeState, to: GCallback.self),
            me
        )
        g_object_weak_ref(UnsafeMutableRawPointer(action).assumingMemoryBound(to: GObject.self), keyActionDisposed, me)
        // Disabled while a system file locks the key (or it is a secret), as
        // g_settings_create_action's action is while its key is not writable.
        let follow = {
            g_simple_action_set_state(action, toState(Defaults[key]))
            g_simple_action_set_enabled(action, isWritable(key) ? 1 : 0)
        }
        follow()
        observation = Defaults.observeOnMainLoop(key, options: []) { _ in follow() }
    }

    /// The action is being disposed: stops following the key and lets go.
    fileprivate func end() {
        observation?.invalidate()
        observation = nil
        retained?.release()
        retained = nil
    }

    /// Adds the action to `map`, which then owns it.
    func add(to map: gpointer, keyName: String) -> OpaquePointer {
        let typeName = String(cString: cgtk_type_name(map))
        let added = cgtk_add_action(map, UnsafeMutableRawPointer(action)) != 0
        g_object_unref(UnsafeMutableRawPointer(action))
        if !added { fatalError("Defaults.addAction: \(typeName) is not a GActionMap (key \"\(keyName)\")") }
        return action
    }
}

/// Ends the key's action that is being disposed (GLib's weak reference callback).
private let keyActionDisposed: GWeakNotify = { data, _ in
    let action = Int(bitPattern: data)
    MainActor.assumeIsolated { unretainedObject(at: action, as: KeyAction.self).end() }
}

extension Defaults {
    /// Adds to `actionMap` a stateful action whose state is `key`'s value: a menu's check item, or
    /// a `GtkCheckButton` or `GtkToggleButton` with its `action-name`.
    ///
    /// As GSettings' `g_settings_create_action`: activating the action toggles the key, its state
    /// follows each change of the key made anywhere (on the main loop), and it lasts as long as the
    /// map keeps it.
    ///
    /// ```swift
    /// let actions = g_simple_action_group_new()
    /// Defaults.addAction(for: .showLineNumbers, to: actions)            // "prefs.showLineNumbers"
    /// gtk_widget_insert_action_group(window, "prefs", actions)
    /// ```
    ///
    /// - Parameters:
    ///   - key: A `Bool` key.
    ///   - name: The action's name; the key's name by default.
    ///   - actionMap: A `GActionMap`: a `GSimpleActionGroup`, a `GtkApplication`, a
    ///     `GtkApplicationWindow`. Anything else stops the program with a message.
    /// - Returns: The action (a `GSimpleAction`), owned by the map.
    @MainActor @discardableResult
    public static func addAction(
        for key: Key<Bool>,
        named name: String? = nil,
        to actionMap: some GObjectPointer
    ) -> OpaquePointer {
        KeyAction(
            key: key,
            name: name ?? key.name,
            parameterType: nil,
            toState: { g_variant_new_boolean($0 ? 1 : 0) },
            fromState: { state in
                g_variant_is_of_type(state, cgtk_variant_type_boolean()) != 0 ? g_variant_get_boolean(state) != 0 : nil
            }
        )
        .add(to: actionMap.gObject, keyName: key.name)
    }

    /// Adds to `actionMap` a stateful action whose state is the raw value of `key`'s case: a menu's
    /// radio items, one per case (`"prefs.theme::dark"`).
    ///
    /// The action takes a string parameter: activating it with a case's raw value writes that case
    /// to the key; a string that is no case's raw value changes nothing. Its state follows each
    /// change of the key made anywhere, on the main loop.
    ///
    /// - Parameters:
    ///   - key: A key whose value is an enum with `String` raw values.
    ///   - name: The action's name; the key's name by default.
    ///   - actionMap: A `GActionMap`: a `GSimpleActionGroup`, a `GtkApplication`, a
    ///     `GtkApplicationWindow`. Anything else stops the program with a message.
    /// - Returns: The action (a `GSimpleAction`), owned by the map.
    @MainActor @discardableResult
    public static func addAction<Value: Serializable & RawRepresentable>(
        for key: Key<Value>,
        named name: String? = nil,
        to actionMap: some GObjectPointer
    ) -> OpaquePointer where Value.RawValue == String {
        KeyAction(
            key: key,
            name: name ?? key.name,
            parameterType: cgtk_variant_type_string(),
            toState: { g_variant_new_string($0.rawValue) },
            fromState: { state in
                guard g_variant_is_of_type(state, cgtk_variant_type_string()) != 0 else { return nil }
                return Value(rawValue: String(cString: g_variant_get_string(state, nil)))
            }
        )
        .add(to: actionMap.gObject, keyName: key.name)
    }
}

/// Whether the user can change `key`.
///
/// No system file locks it, and it is not a secret (which is never written, as a locked key is
/// not). Bindings and actions follow it.
func isWritable<Value: Defaults.Serializable>(_ key: Defaults.Key<Value>) -> Bool {
    if key.isSecret { return false }
    if case .locked = key.suite.source(of: key) { return false }
    return true
}
