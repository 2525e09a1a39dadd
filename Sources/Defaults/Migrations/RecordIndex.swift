import Foundation

/// The ids a store's record of migrations lists, found by the name a key hashed already: a key
/// asks whether its migration ran each time it is created, and a program creates every key at
/// each launch.
///
/// A key's migration id is `<name> from <former names, joined by ", ", or the name> [(<type>)]`
/// (``Defaults/Suite/migrationID(name:formerly:convertsFrom:)``). A name may itself hold
/// `" from "`, so an id is listed under every name it could begin with, by a hash of the name's
/// bytes. A search hashes the key's name, takes the listings of that hash and compares the rest of each id's bytes with the pieces the
/// key's id would be made of: no text is made, no id put together.
///
/// Bytes, not `String` equality: an id written in another Unicode normalization than the key's
/// name is not found here, and its migration goes to the longer road, whose check of the record
/// (by `String` equality) finds it and does not run it again.
struct RecordIndex: Sendable {
    /// The record's list of ids, kept: while it is, a list in the same storage is this one (an
    /// array's storage is not written while shared), so the index is known current without
    /// comparing the ids.
    private let list: [JSONValue]
    /// Each listing: an id, the length in bytes of the name it is listed under, and the hash of
    /// that name's bytes.
    private let listings: [(id: String, nameLength: Int, hash: UInt64)]
    /// An open-addressing table of places in `listings` (`-1`: empty), by name hash; twice as
    /// large as needed or more.
    private let slots: [Int32]

    /// The index of `record`, the value stored under the record's name.
    init(_ record: JSONValue?) {
        list = Self.list(in: record) ?? []
        var listings: [(id: String, nameLength: Int, hash: UInt64)] = []
        listings.reserveCapacity(list.count)
        for case .string(let id) in list {
            Self.withBytes(of: id) { bytes in
                // Every place " from " begins, past the first byte (a name is not empty), with
                // the hash of the bytes before it.
                var hash = Self.emptyHash
                for start in bytes.indices {
                    if start > 0, bytes.count - start > 6, bytes[start] == 0x20, bytes[start + 1] == 0x66,
                        bytes[start + 2] == 0x72, bytes[start + 3] == 0x6F, bytes[start + 4] == 0x6D,
                        bytes[start + 5] == 0x20
                    {
                        listings.append((id, start, hash))
                    }
                    hash = Self.hash(bytes[start], into: hash)
                }
            }
        }
        var capacity = 8
        while capacity < listings.count * 2 { capacity *= 2 }
        var slots = [Int32](repeating: -1, count: capacity)
        let mask = capacity - 1
        for (place, listing) in listings.enumerated() {
            var slot = Self.slot(of: listing.hash) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(truncatingIfNeeded: place)
        }
        self.listings = listings
        self.slots = slots
    }

    /// Whether this is the index of `record`.
    func isIndex(of record: JSONValue?) -> Bool {
        guard let other = Self.list(in: record) else { return list.isEmpty }
        return other.count == list.count
            && other.withUnsafeBufferPointer { other in
                list.withUnsafeBufferPointer { $0.baseAddress == other.baseAddress }
            }
    }

    /// Whether the record lists the migration of the key `name` made of `formerly` and `convertsFrom`.
    func lists(_ name: Defaults.Suite.HashedName, formerly: [String], convertsFrom: String?) -> Bool {
        let hash = Self.withBytes(of: name.text) { bytes in bytes.reduce(Self.emptyHash) { Self.hash($1, into: $0) } }
        let mask = slots.count - 1
        var slot = Self.slot(of: hash) & mask
        while slots[slot] >= 0 {
            let place = Int(slots[slot])
            if listings[place].hash == hash,
                Self.withBytes(
                    of: listings[place].id,
                    { Self.id($0, nameLength: listings[place].nameLength, is: name.text, formerly, convertsFrom) }
                )
            {
                return true
            }
            slot = (slot + 1) & mask
        }
        return false
    }

    /// FNV-1a, 64 bits: the hash of no bytes.
    private static let emptyHash: UInt64 = 0xcbf2_9ce4_8422_2325

    /// FNV-1a, 64 bits: `hash` with one more byte.
    private static func hash(_ byte: UInt8, into hash: UInt64) -> UInt64 {
        (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }

    /// The list of ids in `record`, when it has one.
    private static func list(in record: JSONValue?) -> [JSONValue]? {
        guard case .object(let members)? = record, case .array(let list)? = members["migrations"] else { return nil }
        return list
    }

    /// Where a name hash starts its search: its high bits mixed into the low ones a table of
    /// this size looks at.
    private static func slot(of hash: UInt64) -> Int {
        var mixed = UInt64(truncatingIfNeeded: hash)
        mixed ^= mixed >> 33
        mixed &*= 0xff51_afd7_ed55_8ccd
        mixed ^= mixed >> 33
        return Int(truncatingIfNeeded: mixed)
    }

    /// Whether `id`, listed under a name of `nameLength` bytes, is the id made of the pieces.
    private static func id(
        _ id: UnsafeBufferPointer<UInt8>,
        nameLength: Int,
        is name: String,
        _ formerly: [String],
        _ convertsFrom: String?
    ) -> Bool {
        var offset = 0
        guard take(name, from: id, at: &offset), offset == nameLength, take(" from ", from: id, at: &offset)
        else { return false }
        if formerly.isEmpty, !take(name, from: id, at: &offset) { return false }
        for (index, former) in formerly.enumerated() {
            if index > 0, !take(", ", from: id, at: &offset) { return false }
            if !take(former, from: id, at: &offset) { return false }
        }
        if let convertsFrom {
            guard take(" (", from: id, at: &offset), take(convertsFrom, from: id, at: &offset),
                take(")", from: id, at: &offset)
            else { return false }
        }
        return offset == id.count
    }

    /// Whether `bytes` hold `piece` at `offset`; moves `offset` past it when they do.
    private static func take(_ piece: String, from bytes: UnsafeBufferPointer<UInt8>, at offset: inout Int) -> Bool {
        let start = offset
        guard
            let end = withBytes(
                of: piece,
                { piece -> Int? in
                    guard bytes.count - start >= piece.count else { return nil }
                    guard let first = piece.baseAddress, let base = bytes.baseAddress else { return start }
                    return memcmp(base + start, first, piece.count) == 0 ? start + piece.count : nil
                }
            )
        else { return false }
        offset = end
        return true
    }

    /// Calls `body` with `text`'s UTF-8 bytes: in place for the strings Swift makes (native and
    /// small), copied for any other.
    private static func withBytes<Result>(
        of text: String,
        _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(text.utf8).withUnsafeBufferPointer(body)
    }
}
