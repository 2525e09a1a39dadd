// Part of the fast path: see FastPath.swift.

extension Store {
    /// Which names a store's values may hold, two bits of 256 for each, chosen by the name's
    /// length and its first and last bytes: a name with a bit clear holds no value, learned
    /// without hashing its text.
    ///
    /// A key that declares a migration the store records as run asks whether each of its former
    /// names holds a value, every time it is created: almost always no. A lookup in the values
    /// hashes the name with SipHash; this looks at three bytes. When both bits are set the sieve
    /// says nothing (other names set them), and the values are searched as before.
    struct NameSieve {
        private var bits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        /// The sieve of `names`.
        init(_ names: some Sequence<String>) {
            for name in names {
                let (first, second) = Self.bits(of: name)
                insert(first)
                insert(second)
            }
        }

        /// Whether `name` may be one of the names the sieve was made of: `false` only when it is none.
        @inline(__always)
        func mayHold(_ name: String) -> Bool {
            let (first, second) = Self.bits(of: name)
            return isSet(first) && isSet(second)
        }

        @inline(__always)
        private func isSet(_ bit: Int) -> Bool {
            let word =
                switch bit >> 6 {
                case 0: bits.0
                case 1: bits.1
                case 2: bits.2
                default: bits.3
                }
            return word & (1 &<< UInt64(bit & 63)) != 0
        }

        private mutating func insert(_ bit: Int) {
            let mask: UInt64 = 1 &<< UInt64(bit & 63)
            switch bit >> 6 {
            case 0: bits.0 |= mask
            case 1: bits.1 |= mask
            case 2: bits.2 |= mask
            default: bits.3 |= mask
            }
        }

        /// The two bits of `name`, each in 0..<256: its UTF-8 length and its first and last
        /// bytes, mixed.
        ///
        /// Names that differ only inside (`window.width`, `window.heigth`) share bits; names of
        /// one prefix and a number (`item-1` … `item-99`) spread over ten pairs or so.
        @inline(__always)
        private static func bits(of name: String) -> (Int, Int) {
            let utf8 = name.utf8
            let count = utf8.count
            guard count > 0 else { return (0, 0) }
            // NB: the bytes in place (a small string's are copied to the stack): `first` and
            // `last` of the view cost several times the rest.
            let (first, last) =
                utf8.withContiguousStorageIfAvailable { ($0[0], $0[count - 1]) }
                ?? (utf8.first!, utf8[utf8.index(before: utf8.endIndex)])
            var mixed = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15
            mixed ^= UInt64(first) &* 0xC2B2_AE3D_27D4_EB4F
            mixed ^= UInt64(last) &* 0x1656_67B1_9E37_79F9
            return (Int(truncatingIfNeeded: mixed >> 56), Int(truncatingIfNeeded: (mixed >> 48) & 0xFF))
        }
    }
}
