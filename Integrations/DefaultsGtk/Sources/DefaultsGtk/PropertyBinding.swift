import CGtk
import DefaultsObservation

/// A pointer to a GObject: a widget as GTK's functions return it (`UnsafeMutablePointer<GtkWidget>`),
/// or any other GObject (`OpaquePointer`, how Swift sees GTK's opaque types).
public protocol GObjectPointer {
    /// The object, as GLib's functions take it.
    var gObject: gpointer { get }
}

extension UnsafeMutablePointer: GObjectPointer {
    /// The pointer, untyped.
    public var gObject: gpointer { UnsafeMutableRawPointer(self) }
}

extension OpaquePointer: GObjectPointer {
    /// The pointer, untyped.
    public var gObject: gpointer { UnsafeMutableRawPointer(self) }
}

/// Which ways a binding carries changes.
///
/// The names are GSettings' (`G_SETTINGS_BIND_GET`, `G_SETTINGS_BIND_SET`).
public struct BindingFlags: OptionSet, Sendable {
    /// The raw bits.
    public let rawValue: Int

    /// Flags from their raw bits.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// The property follows the key: it shows the key's value when bound, and each change of it
    /// after, wherever it was made.
    public static let get = BindingFlags(rawValue: 1 << 0)
    /// The key follows the property: each change of the property (the user's, or the program's
    /// own) is written to the key.
    public static let set = BindingFlags(rawValue: 1 << 1)
    /// Leaves the widget's `sensitive` property alone.
    ///
    /// Without it, a binding that writes the key (`.set`) makes a widget insensitive while a system
    /// file locks the key (see the Defaults catalog's "Where settings come from"), and sensitive
    /// again when the lock is lifted, as GSettings does for a key that is not writable. The lock
    /// is looked at when the binding is made and each time the key changes, a lock added or
    /// lifted at the same value included.
    public static let noSensitivity = BindingFlags(rawValue: 1 << 2)
    /// Both ways, what `bind` does when it is given no flags.
    public static let both: BindingFlags = [.get, .set]
}

/// A key bound to a property of a GObject; made by `Defaults.bind`.
///
/// The binding lasts as long as the object: it ends by itself when the object is disposed (a
/// widget destroyed with its window), and then holds nothing and is told of nothing. Keep the
/// binding only to end it sooner, with ``unbind()``.
///
/// A change the binding applies to the property from the store is never written back: while it
/// sets the property, the property's notifications are ignored (a guard, as GSettings has, not a
/// comparison of values). So a widget that normalises what it is given, a spin button clamping
/// 100 to its upper bound of 72, shows 72 and leaves 100 in the store; a value the user enters is
/// written once, as the widget holds it.
@MainActor
public final class PropertyBinding {
    /// The key's name, for messages.
    public let keyName: String
    /// The property's name.
    public let property: String
    private let object: gpointer
    private let readValue: @MainActor () -> PropertyValue
    private let writeValue: @MainActor (PropertyValue) -> Bool
    /// The key's current value as the property shows it.
    private let showKey: () -> PropertyValue
    /// Whether a system file locks the key now; `nil` when the binding leaves sensitivity alone.
    private let isLocked: (() -> Bool)?
    /// What the binding last made the widget's sensitivity follow: whether the key was locked.
    private var shownLocked = false
    private var observation: Defaults.Observation?
    private var notifyHandler: gulong = 0
    /// Set while the binding sets the property: a notification then is the binding's own.
    private var isApplying = false
    /// The binding, kept alive by the object until it ends.
    private var retained: Unmanaged<PropertyBinding>?

    /// Whether the binding still carries changes: not after ``unbind()`` or the object's disposal.
    public private(set) var isBound = true

    fileprivate init<Value: Defaults.Serializable>(
        key: Defaults.Key<Value>,
        object: gpointer,
        property: String,
        mapping: PropertyMapping<Value>,
        flags: BindingFlags
    ) {
        var paramFlags: guint = 0
        let kind = cgtk_property_kind(object, property, &paramFlags)
        let typeName = String(cString: cgtk_type_name(object))
        // FatalError, not precondition: its message is printed in release builds too.
        func stop(_ problem: String) -> Never {
            fatalError("Defaults.bind: \(typeName)'s property \"\(property)\" \(problem) (key \"\(key.name)\")")
        }
        if kind == CGTK_PROPERTY_MISSING { stop("does not exist") }
        if kind == CGTK_PROPERTY_UNSUPPORTED { stop("is not a Boolean, a number or a string") }
        if flags.contains(.get), paramFlags & guint(G_PARAM_WRITABLE.rawValue) == 0 {
            stop("cannot be written, so it cannot follow a key")
        }
        if flags.contains(.set), paramFlags & guint(G_PARAM_READABLE.rawValue) == 0 {
            stop("cannot be read, so a key cannot follow it")
        }
        let shown = mapping.toProperty(Defaults[key])
        if !shown.fits(kind) { stop("cannot hold the key's value, \(shown.kindName)") }
        self.keyName = key.name
        self.property = property
        self.object = object
        readValue = { [property] in
            switch kind {
            case CGTK_PROPERTY_BOOLEAN: return .bool(cgtk_get_boolean(object, property) != 0)
            case CGTK_PROPERTY_SIGNED: return .int(Int64(cgtk_get_int64(object, property)))
            case CGTK_PROPERTY_UNSIGNED: return .uint(UInt64(cgtk_get_uint64(object, property)))
            case CGTK_PROPERTY_FLOATING: return .double(cgtk_get_double(object, property))
            default:
                guard let text = cgtk_get_string(object, property) else { return .string("") }
                defer { g_free(text) }
                return .string(String(cString: text))
            }
        }
        writeValue = { value in
            guard let stored = mapping.fromProperty(value) else { return false }
            Defaults[key] = stored
            return true
        }
        let toProperty = mapping.toProperty
        showKey = { toProperty(Defaults[key]) }
        var sensitiveFlags: guint = 0
        let hasSensitivity = cgtk_property_kind(object, "sensitive", &sensitiveFlags) == CGTK_PROPERTY_BOOLEAN
        isLocked =
            flags.contains(.set) && !flags.contains(.noSensitivity) && hasSensitivity
            ? { !isWritable(key) } : nil
        retained = Unmanaged.passRetained(self)
        let me = Unmanaged.passUnretained(self).toOpaque()
        g_object_weak_ref(object.assumingMemoryBound(to: GObject.self), bindingObjectDisposed, me)
        if flags.contains(.set) {
            let changed: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { _, _, data in
                let binding = Int(bitPattern: data)
                MainActor.assumeIsolated { unretainedObject(at: binding, as: PropertyBinding.self).propertyChanged() }
            }
            notifyHandler = cgtk_connect(object, "notify::\(property)", unsafeBitCast(changed, to: GCallback.self), me)
        }
        if flags.contains(.get) || isLocked != nil {
            observation = Defaults.observeOnMainLoop(key, options: []) { [weak self] _ in
                self?.keyChanged(shows: flags.contains(.get))
            }
            keyChanged(shows: flags.contains(.get))
        }
    }

    /// Ends the binding now: the property and the key no longer follow each other.
    ///
    /// Ending it twice, or after the object's disposal ended it, does nothing.
    public func unbind() {
        guard isBound else { return }
        g_object_weak_unref(
            object.assumingMemoryBound(to: GObject.self),
            bindingObjectDisposed,
            Unmanaged.passUnretained(self).toOpaque()
        )
        if notifyHandler != 0 { g_signal_handler_disconnect(object, notifyHandler) }
        end()
    }

    /// Stops listening to both sides and lets go of the binding.
    fileprivate func end() {
        guard isBound else { return }
        isBound = false
        notifyHandler = 0
        observation?.invalidate()
        observation = nil
        retained?.release()
        retained = nil
    }

    /// The key changed (or the binding is new): makes the widget's sensitivity follow the key's
    /// lock, and, if `shows`, sets the property to the key's value.
    private func keyChanged(shows: Bool) {
        guard isBound else { return }
        if let isLocked, isLocked() != shownLocked {
            shownLocked.toggle()
            cgtk_set_boolean(object, "sensitive", shownLocked ? 0 : 1)
        }
        if shows { showKeyValue() }
    }

    /// Sets the property to the key's value, unless it shows that already.
    ///
    /// The property's notifications while it is set are the binding's own, not written back.
    private func showKeyValue() {
        let value = showKey()
        guard !readValue().shows(value) else { return }
        isApplying = true
        defer { isApplying = false }
        switch value {
        case .bool(let value): cgtk_set_boolean(object, property, value ? 1 : 0)
        case .int(let value): cgtk_set_int64(object, property, gint64(value))
        case .uint(let value): cgtk_set_uint64(object, property, guint64(value))
        case .double(let value): cgtk_set_double(object, property, value)
        case .string(let value): cgtk_set_string(object, property, value)
        }
    }

    /// The property changed: writes its value to the key, unless the binding itself set it.
    ///
    /// A write the suite refuses (a system file locks the key) changes nothing, so the property is
    /// set back to the value in effect.
    private func propertyChanged() {
        guard isBound, !isApplying else { return }
        if writeValue(readValue()), let isLocked, isLocked() { showKeyValue() }
    }
}

/// The object a GLib callback's user data points to (passed as an integer, so the callback's closure
/// can hand it to the main actor), not retained.
func unretainedObject<Object: AnyObject>(at address: Int, as _: Object.Type) -> Object {
    Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeUnretainedValue()
}

/// Ends the binding whose object is being disposed (GLib's weak reference callback); one function,
/// so `unbind()` can remove the weak reference it added.
private let bindingObjectDisposed: GWeakNotify = { data, _ in
    let binding = Int(bitPattern: data)
    MainActor.assumeIsolated { unretainedObject(at: binding, as: PropertyBinding.self).end() }
}

extension Defaults {
    /// Binds `key` to `property` of `object`, both ways unless `flags` say otherwise.
    ///
    /// The property shows the key's value at once, and each change of it after (made by this
    /// program on any thread, another process, a hand edit), on the main loop; each change of the
    /// property (the user's) is written to the key. A change the binding applies is never written
    /// back. The binding ends by itself when the object is disposed.
    ///
    /// ```swift
    /// Defaults.bind(.fontSize, to: spinButton, property: "value")
    /// Defaults.bind(.showLineNumbers, to: toggle, property: "active")
    /// Defaults.bind(.displayName, to: entry, property: "text")     // a String?: empty is nil
    /// ```
    ///
    /// Call it on the main loop's thread; it calls ``GLibMainLoop/driveMainActor()`` if the program
    /// has not, since the changes it applies reach the loop that way. A property the object does
    /// not have, or one that cannot hold the value, stops the program with a message naming both,
    /// as a misspelled key path would not compile.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: A widget, or any GObject.
    ///   - property: The name of one of its properties: a Boolean, a number or a string.
    ///   - flags: Which ways changes go; both by default.
    /// - Returns: The binding, to end it before the object goes.
    @MainActor @discardableResult
    public static func bind<Value: Serializable & PropertyConvertible>(
        _ key: Key<Value>,
        to object: some GObjectPointer,
        property: String,
        flags: BindingFlags = .both
    ) -> PropertyBinding {
        bind(key, to: object, property: property, mapping: .direct, flags: flags)
    }

    /// Binds `key` to `property` of `object` through `mapping`: an enum to a drop-down's selected
    /// position or a string, an inverted Bool, or a mapping of your own.
    ///
    /// As ``bind(_:to:property:flags:)``. A property value the mapping turns into no value of the
    /// key (a drop-down with nothing selected) writes nothing.
    ///
    /// ```swift
    /// Defaults.bind(.theme, to: dropDown, property: "selected", mapping: .caseIndex)
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: A widget, or any GObject.
    ///   - property: The name of one of its properties: a Boolean, a number or a string.
    ///   - mapping: How the key's values become the property's, and back.
    ///   - flags: Which ways changes go; both by default.
    /// - Returns: The binding, to end it before the object goes.
    @MainActor @discardableResult
    public static func bind<Value: Serializable>(
        _ key: Key<Value>,
        to object: some GObjectPointer,
        property: String,
        mapping: PropertyMapping<Value>,
        flags: BindingFlags = .both
    ) -> PropertyBinding {
        GLibMainLoop.driveMainActor()
        return PropertyBinding(key: key, object: object.gObject, property: property, mapping: mapping, flags: flags)
    }
}
