import Foundation

// Part of the fast path: see FastPath.swift.

extension Defaults.Suite {
    /// A key's name with its hash, worked out once, by which the table of keys is searched.
    ///
    /// A read or a write of a ``Defaults/Key`` then hashes one integer instead of the name's text,
    /// and a search compares the hashes of the names it passes before their text.
    struct HashedName: Hashable, Sendable {
        let text: String
        /// `text.hashValue`: stable for the life of the process.
        let hash: Int

        init(_ text: String) {
            self.text = text
            self.hash = text.hashValue
        }

        /// `text` with its hash worked out already: `hash` must be `text.hashValue`.
        init(_ text: String, hash: Int) {
            self.text = text
            self.hash = hash
        }

        static func == (lhs: HashedName, rhs: HashedName) -> Bool {
            lhs.hash == rhs.hash && lhs.text == rhs.text
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }

        /// The bucket hash a `Dictionary` asks for: `hash` (already a seeded SipHash of the
        /// text) mixed with the table's seed by a few multiplies, instead of a whole `Hasher`
        /// round, about half of what a search of the table of keys cost.
        ///
        /// The seed is mixed in, not ignored: tables of different seeds then order the same
        /// names differently, which keeps a copy from one table into another from clustering.
        func _rawHashValue(seed: Int) -> Int {
            var mixed = UInt64(truncatingIfNeeded: hash ^ seed)
            mixed ^= mixed >> 33
            mixed &*= 0xff51_afd7_ed55_8ccd
            mixed ^= mixed >> 33
            mixed &*= 0xc4ce_b9fe_1a85_ec53
            mixed ^= mixed >> 33
            return Int(truncatingIfNeeded: mixed)
        }
    }
}
