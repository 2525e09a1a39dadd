import Foundation

// Part of the fast path: see FastPath.swift.

extension Defaults.Suite {
    /// A decoded value, or the fact that the stored value did not decode as `type`.
    @usableFromInline
    package struct CacheEntry: Sendable {
        package let type: ObjectIdentifier
        /// A `Box<Value>` for the type `type` names; `nil` when the stored value did not decode.
        package var box: AnyBox?

        /// The entry for a decoded value of type `Value`.
        static func holding<Value: Sendable>(_ value: Value) -> CacheEntry {
            CacheEntry(type: ObjectIdentifier(Value.self), box: Box(value))
        }

        /// The entry recording that the stored value does not decode as `Value`.
        static func undecodable<Value>(as type: Value.Type) -> CacheEntry {
            CacheEntry(type: ObjectIdentifier(Value.self), box: nil)
        }

        // NB: callers check `type` and unwrap `box` themselves; returning `Value?` from here would
        // fetch `Optional<Value>` metadata on every call of unspecialized generic code.
    }

    /// A decoded value, kept beside a key's stored one.
    ///
    /// `value` changes only through ``InPlaceWriter``: under the state's lock, and only while
    /// the state's reference is the only one (so no reader holds the box), for a value of a type
    /// with no references in it (so nothing is released under the lock).
    package final class Box<Value: Sendable>: AnyBox, @unchecked Sendable {  // value set only unshared, locked
        // No dynamic exclusivity check: reads would pay for one on every call.
        @exclusivity(unchecked) package fileprivate(set) var value: Value
        init(_ value: Value) { self.value = value }

        /// Where the box keeps its value; for tests of ``InPlaceWriter/boxValueOffset``.
        static func valueAddress(of box: Box<Value>) -> UnsafeRawPointer {
            withUnsafeMutablePointer(to: &box.value) { UnsafeRawPointer($0) }
        }

        override class func json(of box: AnyBox, encoder: ValueCoding.NativeEncoder) -> JSONValue? {
            withUnsafePointer(to: unsafeDowncast(box, to: Box<Value>.self).value) { encoder(UnsafeRawPointer($0)) }
        }
    }

    /// What every ``Box`` is, so a cache entry holds a class reference whose uniqueness can be
    /// checked in place (an existential's cannot: it is opened into a copy).
    ///
    /// Its class method makes the JSON of a value written in place, when the state's values are
    /// read: reached through the metatype, which, unlike a closure, costs no reference counting.
    package class AnyBox: @unchecked Sendable {  // no stored state; only class methods
        /// The stored form of the value in `box`, made by `encoder`.
        class func json(of box: AnyBox, encoder: ValueCoding.NativeEncoder) -> JSONValue? {
            preconditionFailure("abstract")
        }
    }
}
