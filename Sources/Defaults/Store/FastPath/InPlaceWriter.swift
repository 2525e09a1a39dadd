import Foundation

// Part of the fast path: see FastPath.swift.

extension Defaults.Suite {
    /// How a write keeps its value as the decoded one when the value is lossless and holds no
    /// references (an `Int`, a `Bool`, a `Double`, a `Date`): into the box the key keeps already,
    /// when nothing but the state holds it, instead of a new one; its JSON is made later, when
    /// something reads the state's values (see
    /// `State.writeInPlace(of:_:savingOldTo:observers:writer:encoder:commitsLater:)`).
    ///
    /// An `Int` write was 2,139 instructions (callgrind, `defaults-profile write-0`): a box
    /// allocated and the old one freed, the value's text made, the tree's `String` key hashed, two
    /// tables searched. This path is one search and a copy of the value's bytes: 641.
    struct InPlaceWriter: Sendable {
        /// `ObjectIdentifier(Value.self)`.
        let type: ObjectIdentifier
        /// Whether a write of an observed key can take this path too: the value fits the room the
        /// writer keeps for the value it replaces, which the observers are told with.
        let isObservable: Bool
        /// `MemoryLayout<Value>.size`.
        let size: Int

        /// How the value's bits show a NaN, for floating-point values: every NaN is stored as
        /// `"NaN"`, whatever its bits, so bits are no test of a change, and a NaN is written by
        /// the general path, which compares the stored form.
        let nan: NaNBits

        /// Where a value keeps a floating-point number that may be a NaN.
        enum NaNBits: Sendable {
            /// Nowhere: equal bits are the only equal values.
            case none
            /// The value is a `Double` (or holds only one: a `Date`).
            case double
            /// The value is a `Float`.
            case float

            /// Whether the value at `value` is a NaN.
            func isNaN(_ value: UnsafeRawPointer) -> Bool {
                switch self {
                case .none: false
                case .double: value.loadUnaligned(as: Double.self).isNaN
                case .float: value.loadUnaligned(as: Float.self).isNaN
                }
            }

            /// Where `Value` keeps a NaN; `nil` for a floating-point type this does not know, which
            /// is then not written in place.
            static func of<Value>(_: Value.Type) -> NaNBits? {
                if Value.self == Date.self {
                    return MemoryLayout<Date>.size == MemoryLayout<Double>.size ? .double : nil
                }
                guard Value.self is any FloatingPoint.Type else { return NaNBits.none }
                switch MemoryLayout<Value>.size {
                case MemoryLayout<Double>.size: return .double
                case MemoryLayout<Float>.size: return .float
                default: return nil
                }
            }
        }

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
            guard _isPOD(Value.self), ValueCoding.nativeEncoder(for: Value.self) != nil,
                MemoryLayout<Value>.alignment <= boxValueOffset, let nan = NaNBits.of(Value.self)
            else { return nil }
            return InPlaceWriter(
                type: ObjectIdentifier(Value.self),
                isObservable: MemoryLayout<Value>.size <= maximumObservedSize
                    && MemoryLayout<Value>.alignment <= MemoryLayout<UInt64>.alignment,
                size: MemoryLayout<Value>.size,
                nan: nan
            )
        }

        /// Where a ``Box`` keeps its value, from the start of the object: right after the
        /// object's header (its type and its reference counts, a word each), for a value aligned
        /// to at most that much, as every value this writer takes is
        /// (`InPlaceWriterTests` holds it to the value's address for each kind of value).
        static let boxValueOffset = 2 * MemoryLayout<UInt>.size

        /// Stores the value at `value` into `box`, unless the box holds the same bits already.
        ///
        /// `box` is a box of the writer's type. Returns whether it stored; when it does, the
        /// value it replaced is copied into `old` first, if it fits (``isObservable``).
        ///
        /// Not through the box's generic code: that looked the value's size up in the type's
        /// runtime metadata, and copied and compared through calls, on every write; this knows
        /// the size and where the value is, and moves a word in place.
        @inline(__always)
        func replace(_ value: UnsafeRawPointer, in box: AnyBox, savingOldTo old: inout ValueBytes) -> Bool {
            let held = UnsafeMutableRawPointer(Unmanaged.passUnretained(box).toOpaque()) + Self.boxValueOffset
            if size == MemoryLayout<UInt64>.size {
                let new = value.loadUnaligned(as: UInt64.self)
                let current = held.load(as: UInt64.self)
                if new == current { return false }
                old.0 = current
                held.storeBytes(of: new, as: UInt64.self)
                return true
            }
            if memcmp(held, value, size) == 0 { return false }
            if isObservable {
                withUnsafeMutableBytes(of: &old) { $0.baseAddress!.copyMemory(from: held, byteCount: size) }
            }
            held.copyMemory(from: value, byteCount: size)
            return true
        }
    }
}
