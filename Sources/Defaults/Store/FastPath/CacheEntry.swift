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

        override class func replace(
            _ value: UnsafeRawPointer,
            in box: AnyBox,
            savingOldTo old: UnsafeMutableRawPointer?
        ) -> Bool {
            // By address, with no copy of the value: the unspecialized generic copy cost more
            // than the comparison. The caller made sure `Value` holds no references.
            withUnsafeMutablePointer(to: &unsafeDowncast(box, to: Box<Value>.self).value) { held in
                let size = MemoryLayout<Value>.size
                if memcmp(held, value, size) == 0 { return false }
                old?.copyMemory(from: held, byteCount: size)
                UnsafeMutableRawPointer(held).copyMemory(from: value, byteCount: size)
                return true
            }
        }

        override class func json(of box: AnyBox, encoder: ValueCoding.NativeEncoder) -> JSONValue? {
            withUnsafePointer(to: unsafeDowncast(box, to: Box<Value>.self).value) { encoder(UnsafeRawPointer($0)) }
        }
    }

    /// What every ``Box`` is, so a cache entry holds a class reference whose uniqueness can be
    /// checked in place (an existential's cannot: it is opened into a copy).
    ///
    /// The class methods are ``InPlaceWriter``'s: reached through the metatype, which, unlike a
    /// closure, costs no reference counting on a write.
    package class AnyBox: @unchecked Sendable {  // no stored state; only class methods
        /// Stores the value at `value`, which holds no references, into `box`, a box of the type
        /// the subclass boxes, unless the box holds the same bits already; returns whether it did.
        ///
        /// When it does and `old` is given, the value it replaced is copied there first.
        class func replace(
            _ value: UnsafeRawPointer,
            in box: AnyBox,
            savingOldTo old: UnsafeMutableRawPointer?
        ) -> Bool {
            preconditionFailure("abstract")
        }

        /// The stored form of the value in `box`, made by `encoder`.
        class func json(of box: AnyBox, encoder: ValueCoding.NativeEncoder) -> JSONValue? {
            preconditionFailure("abstract")
        }
    }
}
