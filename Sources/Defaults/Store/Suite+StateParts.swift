import Dispatch
import Foundation
import Synchronization

extension Defaults.Suite {
    enum WriteRefusal: Equatable {
        /// The file may not be written by this process: why.
        case readOnly(String)
        /// A system file locks the key.
        case locked(by: URL)
    }

    /// A key's name with its hash, worked out once, by which the table of keys is searched.
    ///
    /// A read or a write of a ``Defaults/Key`` then hashes one integer instead of the name's text,
    /// and a search compares the hashes of the names it passes before their text.
    package struct HashedName: Hashable, Sendable {
        package let text: String
        /// `text.hashValue`: stable for the life of the process.
        let hash: Int

        package init(_ text: String) {
            self.text = text
            self.hash = text.hashValue
        }

        package static func == (lhs: HashedName, rhs: HashedName) -> Bool {
            lhs.hash == rhs.hash && lhs.text == rhs.text
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }

        /// The bucket hash a `Dictionary` asks for: `hash` (already a seeded SipHash of the
        /// text) mixed with the table's seed by a few multiplies, instead of a whole `Hasher`
        /// round, about half of what a search of the table of keys cost.
        ///
        /// NB: the seed is mixed in, not ignored: tables of different seeds then order the same
        /// names differently, which keeps a copy from one table into another from clustering.
        package func _rawHashValue(seed: Int) -> Int {
            var mixed = UInt64(truncatingIfNeeded: hash ^ seed)
            mixed ^= mixed >> 33
            mixed &*= 0xff51_afd7_ed55_8ccd
            mixed ^= mixed >> 33
            mixed &*= 0xc4ce_b9fe_1a85_ec53
            mixed ^= mixed >> 33
            return Int(truncatingIfNeeded: mixed)
        }
    }

    /// What a state keeps beside one key's stored value.
    struct KeyState {
        /// The value decoded as the type last read or written; `nil` when none is kept.
        var decoded: CacheEntry?
        /// File stores: whether the key was changed here since the last successful write.
        var isChanged = false
        /// The key's observers, as the observation module keeps them.
        var observers: (any Defaults.ObserverSlot)?

        /// Whether ``decoded`` holds a value written in place whose JSON the state's tree does
        /// not have yet (see `State.staleJSON`).
        var isJSONStale = false

        /// Whether the entry holds nothing, so it can go.
        var isEmpty: Bool { decoded == nil && !isChanged && observers == nil }

        /// Whether `entry` holds nothing; for an entry lent in place.
        static func isEmpty(_ entry: inout KeyState) -> Bool { entry.isEmpty }

        /// The observers of `entry`; for an entry lent in place.
        static func observers(of entry: inout KeyState) -> (any Defaults.ObserverSlot)? { entry.observers }

        /// Marks the key changed; returns whether it was already.
        mutating func markChanged() -> Bool {
            defer { isChanged = true }
            return isChanged
        }

        /// Replaces the decoded value and marks the key changed when asked; returns the old decoded
        /// value, the observers and whether the key was marked changed already.
        mutating func record(
            _ newDecoded: CacheEntry?,
            marksChanged: Bool
        ) -> (CacheEntry?, (any Defaults.ObserverSlot)?, Bool) {
            // NB: swapped out, not copied: a copy and a release of the old box on every write.
            var old = newDecoded
            swap(&old, &decoded)
            let wasChanged = isChanged
            if marksChanged { isChanged = true }
            return (old, observers, wasChanged)
        }
    }

    /// A decoded value, or the fact that the stored value did not decode as `type`.
    @usableFromInline
    package struct CacheEntry: Sendable {
        package let type: ObjectIdentifier
        /// A `Box<Value>` for the type `type` names; `nil` when the stored value did not decode.
        package var box: AnyBox?

        /// The entry for a decoded value of type `Value`.
        package static func holding<Value: Sendable>(_ value: Value) -> CacheEntry {
            CacheEntry(type: ObjectIdentifier(Value.self), box: Box(value))
        }

        /// The entry recording that the stored value does not decode as `Value`.
        package static func undecodable<Value>(as type: Value.Type) -> CacheEntry {
            CacheEntry(type: ObjectIdentifier(Value.self), box: nil)
        }

        // NB: callers check `type` and unwrap `box` themselves; returning `Value?` from here would
        // fetch `Optional<Value>` metadata on every call of unspecialized generic code.
    }

    /// A decoded value, kept beside a key's stored one.
    ///
    /// NB: `value` changes only through ``InPlaceWriter``: under the state's lock, and only while
    /// the state's reference is the only one (so no reader holds the box), for a value of a type
    /// with no references in it (so nothing is released under the lock).
    package final class Box<Value: Sendable>: AnyBox, @unchecked Sendable {  // value set only unshared, locked
        // NB: no dynamic exclusivity check: reads would pay for one on every call.
        @exclusivity(unchecked) package fileprivate(set) var value: Value
        package init(_ value: Value) { self.value = value }

        override class func replace(_ value: UnsafeRawPointer, in box: AnyBox) -> Bool {
            // NB: by address, with no copy of the value: the unspecialized generic copy cost more
            // than the comparison. The caller made sure `Value` holds no references.
            withUnsafeMutablePointer(to: &unsafeDowncast(box, to: Box<Value>.self).value) { held in
                let size = MemoryLayout<Value>.size
                if memcmp(held, value, size) == 0 { return false }
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
        class func replace(_ value: UnsafeRawPointer, in box: AnyBox) -> Bool {
            preconditionFailure("abstract")
        }

        /// The stored form of the value in `box`, made by `encoder`.
        class func json(of box: AnyBox, encoder: ValueCoding.NativeEncoder) -> JSONValue? {
            preconditionFailure("abstract")
        }
    }

    /// How a write keeps its value as the decoded one when the value is lossless and holds no
    /// references (an `Int`, a `Bool`, a `Double`, a `Date`): into the box the key keeps already,
    /// when nothing but the state holds it, instead of a new one; its JSON is made later, when
    /// something reads the state's tree (see `State.writeInPlace(of:_:writer:encoder:isFile:)`).
    ///
    /// An `Int` write was 2,139 instructions (callgrind, `defaults-profile write-0`): a box
    /// allocated and the old one freed, the value's text made, the tree's `String` key hashed, two
    /// tables searched. This path is one search and a copy of the value's bytes: 641.
    struct InPlaceWriter: Sendable {
        /// `ObjectIdentifier(Value.self)`.
        let type: ObjectIdentifier
        /// `Box<Value>`.
        let boxType: AnyBox.Type

        /// The writer for `Value`, or `nil` when its values hold references, which a write must
        /// not release under the lock, or are not stored natively.
        ///
        /// NB: no closure in here: a copy of the writer would retain it on every write.
        static func make<Value: Sendable>(for _: Value.Type) -> InPlaceWriter? {
            guard _isPOD(Value.self), ValueCoding.nativeEncoder(for: Value.self) != nil else { return nil }
            return InPlaceWriter(type: ObjectIdentifier(Value.self), boxType: Box<Value>.self)
        }
    }
}
