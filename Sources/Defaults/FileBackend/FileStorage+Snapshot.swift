import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension FileStorage {
    // MARK: - Versions of the file

    /// A version of the file: its bytes and its top-level members.
    struct Snapshot: Sendable {
        let bytes: [UInt8]
        /// The members parsed: every one, but the record of migrations while ``deferredRecord``
        /// holds it.
        let parsedMembers: [String: JSONValue]
        /// The record of migrations (the member named `""`), checked as JSON but not made.
        ///
        /// An open seldom needs its hundred strings. `nil` when there is none, or it was parsed.
        let deferredRecord: DeferredJSON?
        /// Where each member starts in `bytes` (its name's opening quote), in the order written.
        ///
        /// `nil` when not known: a file written here, one with a byte order mark, one that gives a
        /// name twice. A later version is parsed only where it differs (``parseChange(of:to:)``).
        let memberStarts: [UInt32]?
        /// Names this snapshot alone among its kind: what ``Changes/base`` refers to.
        let serial: UInt64
        /// What changed since the snapshot this one was parsed as a change of, when it was.
        let changes: Changes?

        /// The members whose values differ from those of the snapshot `base`.
        struct Changes: Sendable {
            /// The ``Snapshot/serial`` of the version these are changes of.
            let base: UInt64
            /// The names whose values differ: added, removed, or changed.
            let names: [String]
        }

        init(
            bytes: [UInt8],
            members: [String: JSONValue],
            deferredRecord: Range<Int>? = nil,
            memberStarts: [UInt32]? = nil,
            changes: Changes? = nil
        ) {
            self.bytes = bytes
            self.parsedMembers = members
            self.deferredRecord = deferredRecord.map { DeferredJSON(document: bytes, range: $0) }
            self.memberStarts = memberStarts
            self.changes = changes
            self.serial = Snapshot.serials.add(1, ordering: .relaxed).newValue
        }

        private static let serials = Atomic<UInt64>(0)

        /// Every member, the record of migrations made now if it was deferred.
        var members: [String: JSONValue] {
            guard let deferredRecord else { return parsedMembers }
            var all = parsedMembers
            all[Defaults.Suite.migrationRecordName] = deferredRecord.value
            return all
        }

        /// The record of migrations, made now if it was deferred.
        var record: JSONValue? {
            deferredRecord?.value ?? parsedMembers[Defaults.Suite.migrationRecordName]
        }

        /// Whether `self` and `other` hold the same record of migrations (by its text, when both
        /// deferred it).
        func hasSameRecord(as other: Snapshot?) -> Bool {
            if let deferredRecord, let theirs = other?.deferredRecord { return deferredRecord == theirs }
            return record == other?.record
        }
    }

    /// The file `bytes`, parsed whole, with where its members start; `nil` when its top level is
    /// not an object.
    static func snapshot(of bytes: [UInt8]) throws(JSONParser.Failure) -> Snapshot? {
        guard !bytes.starts(with: [0xEF, 0xBB, 0xBF]) else {
            return try members(of: bytes).map { Snapshot(bytes: bytes, members: $0) }
        }
        return try JSONParser.parseTopLevel(bytes, defersRecord: true)
            .map {
                Snapshot(bytes: bytes, members: $0.members, deferredRecord: $0.deferredRecord, memberStarts: $0.starts)
            }
    }

    /// The file `bytes`, a later version of `known`, parsed only where the two differ.
    ///
    /// The bytes the two versions share at their start and at their end parse as they did: the
    /// parser reads from left to right, so a member that ends where both still agree (the byte
    /// after it included) parsed the same, and at the start of a member that follows a comma, the
    /// same bytes to the end parse the same. So only the members between the last such start in
    /// the shared beginning and the first in the shared end are parsed, in both versions; the new
    /// members are `known`'s with those replaced, and the changes are the names among them whose
    /// values differ.
    ///
    /// - Returns: `nil` when that cannot be done: `known`'s starts are unknown, the change reaches
    ///   its first member, the new version gives a name twice, or it is broken (a full parse then
    ///   reports it as it always does).
    static func parseChange(of known: Snapshot, to bytes: [UInt8]) -> Snapshot? {
        guard let starts = known.memberStarts, starts.count >= 2, bytes.count <= Int(UInt32.max) else { return nil }
        let old = known.bytes
        let prefix = sharedPrefix(old, bytes)
        let suffix = sharedSuffix(old, bytes, limit: min(old.count, bytes.count) - prefix)
        // The first member parsed again: the last to start (its opening quote included) in the
        // shared beginning. Not the first member: it follows the `{`, not a comma.
        let first = count(of: starts, below: prefix) - 1
        guard first >= 1 else { return nil }
        // The first member parsed as before again: the first after `first` to start in the shared end.
        let last = max(first + 1, count(of: starts, below: old.count - suffix))
        let shift = bytes.count - old.count
        let stop = last < starts.count ? Int(starts[last]) + shift : nil
        guard let new = try? JSONParser.parseMembers(bytes, from: Int(starts[first]), stoppingAt: stop) else {
            return nil
        }
        let end = new.stopped ? last : starts.count
        guard
            let replaced = try? JSONParser.parseMembers(
                old,
                from: Int(starts[first]),
                stoppingAt: end < starts.count ? Int(starts[end]) : nil
            ), replaced.stopped == (end < starts.count), replaced.members.count == end - first
        else { return nil }
        // A deferred record stays deferred when it lies before the members parsed again: its
        // bytes are where they were.
        let deferred = known.deferredRecord?.range
        if let deferred, deferred.lowerBound >= Int(starts[first]) || new.members.contains(where: { $0.key.isEmpty }) {
            return nil
        }
        var members = known.parsedMembers
        var previous: [String: JSONValue] = [:]
        previous.reserveCapacity(replaced.members.count)
        for (name, value) in replaced.members {
            previous[name] = value
            members.removeValue(forKey: name)
        }
        for (name, value) in new.members { members[name] = value }
        // A name given twice (in the new members, or also outside them) keeps its last value,
        // which a full parse finds.
        let deferredCount = deferred == nil ? 0 : 1
        guard members.count + deferredCount == starts.count - (end - first) + new.members.count else { return nil }
        var names: [String] = []
        for (name, value) in new.members where previous[name] != value { names.append(name) }
        for (name, _) in replaced.members where members[name] == nil { names.append(name) }
        var memberStarts: [UInt32] = []
        memberStarts.reserveCapacity(members.count)
        memberStarts.append(contentsOf: starts[..<first])
        memberStarts.append(contentsOf: new.starts)
        memberStarts.append(contentsOf: starts[end...].lazy.map { UInt32(Int($0) + shift) })
        return Snapshot(
            bytes: bytes,
            members: members,
            deferredRecord: deferred,
            memberStarts: memberStarts,
            changes: Snapshot.Changes(base: known.serial, names: names)
        )
    }

    /// How many of `starts` (in ascending order) are below `bound`.
    private static func count(of starts: [UInt32], below bound: Int) -> Int {
        var low = 0
        var high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if Int(starts[middle]) < bound { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The number of bytes `lhs` and `rhs` share at their start.
    static func sharedPrefix(_ lhs: [UInt8], _ rhs: [UInt8]) -> Int {
        lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in
                let count = min(left.count, right.count)
                var offset = 0
                // `memcmp` a block at a time (it compares 32 bytes an instruction), then bytes.
                while offset + 4096 <= count, memcmp(left.baseAddress! + offset, right.baseAddress! + offset, 4096) == 0
                {
                    offset += 4096
                }
                while offset < count, left[offset] == right[offset] { offset += 1 }
                return offset
            }
        }
    }

    /// The number of bytes `lhs` and `rhs` share at their end, up to `limit`.
    static func sharedSuffix(_ lhs: [UInt8], _ rhs: [UInt8], limit: Int) -> Int {
        lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in
                var shared = 0
                while shared + 4096 <= limit,
                    memcmp(
                        left.baseAddress! + left.count - shared - 4096,
                        right.baseAddress! + right.count - shared - 4096,
                        4096
                    ) == 0
                {
                    shared += 4096
                }
                while shared < limit, left[left.count - shared - 1] == right[right.count - shared - 1] { shared += 1 }
                return shared
            }
        }
    }
}
