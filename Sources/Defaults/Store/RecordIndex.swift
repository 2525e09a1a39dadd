import Foundation

/// The ids a store's record of migrations lists, searched by a key's migration without making
/// its id: a key asks whether its migration ran each time it is created, and a program creates
/// every key at each launch.
///
/// A key's migration id is `<name> from <former names, joined by ", ", or the name> [(<type>)]`
/// (``Defaults/Suite/migrationID(name:formerly:convertsFrom:)``). The index hashes each id's
/// UTF-8 bytes, and a search puts the bytes of the id it looks for together on the stack, hashes
/// them and compares them with the ids of that hash: no text is made on either side.
///
/// Bytes, not `String` equality: an id written in another Unicode normalization than the key's
/// name is not found here, and its migration goes to the longer road, whose check of the record
/// (by `String` equality) finds it and does not run it again.
struct RecordIndex: Sendable {
    /// The record's list of ids, kept: while it is, a list in the same storage is this one (an
    /// array's storage is not written while shared), so the index is known current without
    /// comparing the ids.
    private let list: [JSONValue]
    /// The ids, as the record lists them.
    private let ids: [String]
    /// Each id's hash, by its place in `ids`.
    private let hashes: [UInt64]
    /// An open-addressing table of places in `ids` (`-1`: empty), twice as large as needed or more.
    private let slots: [Int32]

    /// The index of `record`, the value stored under the record's name.
    init(_ record: JSONValue?) {
        let list = Self.list(in: record) ?? []
        self.init(list: list, ids: list.compactMap { if case .string(let id) = $0 { id } else { nil } })
    }

    /// Whether this is the index of `record`.
    func isIndex(of record: JSONValue?) -> Bool {
        guard let other = Self.list(in: record) else { return list.isEmpty }
        return other.count == list.count
            && other.withUnsafeBufferPointer { other in
                list.withUnsafeBufferPointer { $0.baseAddress == other.baseAddress }
            }
    }

    /// The list of ids in `record`, when it has one.
    private static func list(in record: JSONValue?) -> [JSONValue]? {
        guard case .object(let members)? = record, case .array(let list)? = members["migrations"] else { return nil }
        return list
    }

    private init(list: [JSONValue], ids: [String]) {
        self.list = list
        self.ids = ids
        var capacity = 8
        while capacity < ids.count * 2 { capacity *= 2 }
        var hashes: [UInt64] = []
        hashes.reserveCapacity(ids.count)
        var slots = [Int32](repeating: -1, count: capacity)
        let mask = capacity - 1
        for (place, id) in ids.enumerated() {
            let hash = Self.withBytes(of: id, Self.hash)
            hashes.append(hash)
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(truncatingIfNeeded: place)
        }
        self.hashes = hashes
        self.slots = slots
    }

    /// Whether the record lists the migration of the key `name` made of `formerly` and `convertsFrom`.
    func lists(_ name: Defaults.Suite.HashedName, formerly: [String], convertsFrom: String?) -> Bool {
        guard !ids.isEmpty else { return false }
        // The id's bytes, put together on the stack.
        var length = name.text.utf8.count + 6
        if formerly.isEmpty { length += name.text.utf8.count }
        for former in formerly { length += former.utf8.count + 2 }
        if let convertsFrom { length += convertsFrom.utf8.count + 3 }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { buffer in
            var end = 0
            Self.append(name.text, to: buffer, at: &end)
            Self.append(" from ", to: buffer, at: &end)
            if formerly.isEmpty { Self.append(name.text, to: buffer, at: &end) }
            for (index, former) in formerly.enumerated() {
                if index > 0 { Self.append(", ", to: buffer, at: &end) }
                Self.append(former, to: buffer, at: &end)
            }
            if let convertsFrom {
                Self.append(" (", to: buffer, at: &end)
                Self.append(convertsFrom, to: buffer, at: &end)
                Self.append(")", to: buffer, at: &end)
            }
            let id = UnsafeBufferPointer(rebasing: buffer[..<end])
            let hash = Self.hash(id)
            let mask = slots.count - 1
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] >= 0 {
                let place = Int(slots[slot])
                if hashes[place] == hash, Self.withBytes(of: ids[place], { Self.same($0, id) }) { return true }
                slot = (slot + 1) & mask
            }
            return false
        }
    }

    /// Copies `text`'s UTF-8 bytes into `buffer` at `end`, and moves `end` past them.
    private static func append(_ text: String, to buffer: UnsafeMutableBufferPointer<UInt8>, at end: inout Int) {
        let start = end
        end = withBytes(of: text) { bytes in
            UnsafeMutableBufferPointer(rebasing: buffer[start...]).initialize(fromContentsOf: bytes) + start
        }
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

    /// Whether `one` and `other` hold the same bytes.
    private static func same(_ one: UnsafeBufferPointer<UInt8>, _ other: UnsafeBufferPointer<UInt8>) -> Bool {
        guard one.count == other.count else { return false }
        guard let first = one.baseAddress, let second = other.baseAddress else { return true }
        return memcmp(first, second, one.count) == 0
    }

    /// FNV-1a of `bytes`, 64 bits.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            value ^= UInt64(byte)
            value &*= 0x0000_0100_0000_01b3
        }
        return value
    }
}
