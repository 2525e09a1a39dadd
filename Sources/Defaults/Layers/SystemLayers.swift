import Foundation

/// The system files beneath a suite's own file: values for the keys the user's file lacks, and
/// locks, as the XDG Base Directory spec's `$XDG_CONFIG_DIRS` cascade describes.
///
/// The first file listed wins where two set the same key. A file locks keys with its member named
/// `""` — the one name no setting can have, since a key's name is never empty:
///
/// ```json
/// { "": { "locked": ["fontSize", "theme"] }, "fontSize": 12, "theme": "dark" }
/// ```
///
/// `"locked": true` locks every key the file sets. A locked key reads the system value (the first
/// system file's that sets it, or the key's default), whatever the user's file and this run's
/// overrides say, and writes to it are refused. Held in the store's state, under its lock.
struct SystemLayers: Sendable {
    /// What one system file brings, as last read.
    struct Layer: Sendable {
        /// The file as the suite was given it.
        let url: URL
        /// The file as last read, to tell an unchanged one; `nil` when there was none.
        var snapshot: FileStorage.Snapshot?
        /// The values it sets: its members, but the one named `""`.
        var values: [String: JSONValue] = [:]
        /// The keys it locks.
        var locks: Set<String> = []

        /// A layer with nothing in it: the file is missing, or could not be used.
        init(url: URL) {
            self.url = url
        }

        /// The layer of `snapshot`, the file at `url` as just read; what is wrong with its locks,
        /// if anything, is in `problem` (the values still count).
        init(url: URL, snapshot: FileStorage.Snapshot?, problem: inout Defaults.StorageError?) {
            self.url = url
            self.snapshot = snapshot
            guard let snapshot else { return }
            values = snapshot.members
            guard let meta = values.removeValue(forKey: "") else { return }
            let (locked, reason) = Self.locks(in: meta, setting: values.keys)
            locks = locked
            if let reason { problem = .invalidLocks(url: url, reason: reason) }
        }

        /// The keys the member `""` of a file that sets `names` locks, and what is wrong with it;
        /// none are locked when something is.
        private static func locks(
            in meta: JSONValue,
            setting names: some Collection<String>
        ) -> (locked: Set<String>, problem: String?) {
            guard case .object(let members) = meta else {
                return ([], #"the member "" must be an object, such as {"locked": ["fontSize"]}"#)
            }
            var locked: Set<String> = []
            // "migrations": the record of a file that is some suite's own file too (see
            // `Suite+Migration.swift`), which locks nothing.
            for (name, value) in members where name != "migrations" {
                guard name == "locked" else { return ([], #"the member "" has an unknown member "\#(name)""#) }
                switch value {
                case .bool(true): locked.formUnion(names)
                case .bool(false): break
                case .array(let items):
                    for item in items {
                        guard case .string(let key) = item, !key.isEmpty else {
                            return ([], #""locked" must list key names, as strings"#)
                        }
                        locked.insert(key)
                    }
                default:
                    return ([], #""locked" must be a list of key names, or true for every key the file sets"#)
                }
            }
            return (locked, nil)
        }
    }

    /// The files, first listed first: the first that sets a key gives its value.
    private(set) var layers: [Layer]
    /// Every key some system file sets, with the first such file's value.
    private(set) var values: [String: JSONValue] = [:]
    /// Every locked key, with the index of the first file that locks it.
    private(set) var locks: [String: Int] = [:]

    init(_ layers: [Layer]) {
        self.layers = layers
        merge()
    }

    /// Replaces what the file at `index` brings.
    mutating func replace(_ index: Int, with layer: Layer) {
        layers[index] = layer
        merge()
    }

    /// The value of `name` when it is locked: the system value, or `nil` for the key's default;
    /// `.none` when it is not locked.
    func lockedValue(named name: String) -> JSONValue?? {
        guard locks[name] != nil else { return .none }
        return .some(values[name])
    }

    /// What a read of `name` sees before this run's overrides, where the user's file holds `stored`.
    ///
    /// A locked key's system value (`nil` for its default), or else the user's, or else the first
    /// system file's that sets it: the one rule of the layers, which every other view is made from.
    func seen(_ name: String, stored: JSONValue?) -> JSONValue? {
        if let locked = lockedValue(named: name) { return locked }
        return stored ?? values[name]
    }

    /// ``seen(_:stored:)`` of every key set somewhere, where the user's file holds `stored`.
    func seen(stored: [String: JSONValue]) -> [String: JSONValue] {
        var seen = values
        for (name, value) in stored where locks[name] == nil { seen[name] = value }
        return seen
    }

    /// The index of the first file that sets `name`.
    func origin(of name: String) -> Int? {
        layers.firstIndex { $0.values[name] != nil }
    }

    private mutating func merge() {
        // The first file listed first, each key kept from the first that has it.
        values = [:]
        locks = [:]
        values.reserveCapacity(layers.reduce(0) { $0 + $1.values.count })
        for index in layers.indices {
            values.merge(layers[index].values) { earlier, _ in earlier }
            for name in layers[index].locks where locks[name] == nil { locks[name] = index }
        }
    }
}
