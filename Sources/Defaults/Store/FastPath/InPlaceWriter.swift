import Foundation

// Part of the fast path: see FastPath.swift.

extension Defaults.Suite {
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
        /// Whether a write of an observed key can take this path too: the value fits the room the
        /// writer keeps for the value it replaces, which the observers are told with.
        let isObservable: Bool

        /// Room for the value a write replaced, for its observers: at most 16 bytes, aligned as a
        /// `UInt64`.
        typealias ValueBytes = (UInt64, UInt64)

        /// The most bytes a ``ValueBytes`` holds.
        static let maximumObservedSize = MemoryLayout<ValueBytes>.size

        /// The writer for `Value`, or `nil` when its values hold references, which a write must
        /// not release under the lock, or are not stored natively.
        ///
        /// No closure in here: a copy of the writer would retain it on every write.
        static func make<Value: Sendable>(for _: Value.Type) -> InPlaceWriter? {
            guard _isPOD(Value.self), ValueCoding.nativeEncoder(for: Value.self) != nil else { return nil }
            return InPlaceWriter(
                type: ObjectIdentifier(Value.self),
                boxType: Box<Value>.self,
                isObservable: MemoryLayout<Value>.size <= maximumObservedSize
                    && MemoryLayout<Value>.alignment <= MemoryLayout<UInt64>.alignment
            )
        }
    }
}
