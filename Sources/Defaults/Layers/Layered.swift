import Foundation

extension Store {
    /// What reads see beyond the user's values, and which writes are refused: the store's layers,
    /// one part of its state (``State/layered``), behind the store's one lock.
    ///
    /// Its sources are the system files beneath the user's file, this run's overrides above it,
    /// the secret keys' files, the key migrations read through rather than applied, and the
    /// reason this process may not write the file. ``layering`` follows every change of a source,
    /// so the hot paths test one field, and nobody has to remember to work it out again.
    struct Layered {
        /// Values for this run from launch arguments or the environment; `nil` when none were asked for.
        var overrides: Overrides? { didSet { updateLayering() } }
        /// The system files beneath the user's file, when the suite was opened with some.
        var systemFiles: SystemLayers? { didSet { updateLayering() } }
        /// The secret keys and what their files hold; `nil` until a key is declared secret.
        var secrets: Secrets? { didSet { updateLayering() } }
        /// The key migrations read through rather than applied; `nil` until one is.
        var migrations: MigrationLayer? { didSet { updateLayering() } }
        /// Why this process may not write the suite's file, when it may not.
        var readOnlyReason: String? { didSet { updateLayering() } }
        /// What reads and writes must consult beyond the user's values, worked out from the
        /// sources above whenever one of them changes.
        private(set) var layering: Layering = []

        /// What a state's reads and writes must consult beyond the user's values: one value, so
        /// the hot paths test one field (an empty set: the user's values alone, and every write goes).
        struct Layering: OptionSet {
            let rawValue: UInt8

            /// Some system file sets or locks a key: a read sees ``SystemLayers/seen(_:stored:)``.
            static let systemFiles = Layering(rawValue: 1 << 0)
            /// This run overrides some keys (launch arguments, environment): a read of one sees the
            /// override, and a change of one is not reported.
            static let overrides = Layering(rawValue: 1 << 1)
            /// Some writes are refused: the file is read-only, or a system file locks keys.
            static let refusals = Layering(rawValue: 1 << 2)
            /// Some keys are secret: a read of one sees ``Secrets`` and nothing else.
            ///
            /// A write of one is refused; writes of other keys pay only for the test of this flag.
            static let secrets = Layering(rawValue: 1 << 3)

            /// Some key migrations are read through, not applied to the store (``MigrationLayer``):
            /// a read of one of their keys may see what the migration would store.
            static let migrations = Layering(rawValue: 1 << 4)

            /// What a read must consult beneath the user's values (overrides are looked at apart).
            static let seenByReads: Layering = [.systemFiles, .secrets, .migrations]
            /// What a write of one key by its JSON must check first (overrides change only what is
            /// reported, which the write works out itself; secrets only for a secret key's name; a
            /// migration read through changes what the write replaced, for reads).
            static let checkedByWrites: Layering = [.systemFiles, .refusals, .migrations]
        }

        /// Works ``layering`` out from the sources.
        private mutating func updateLayering() {
            var layering: Layering = []
            if let systemFiles, !systemFiles.values.isEmpty || !systemFiles.locks.isEmpty {
                layering.insert(.systemFiles)
            }
            if overrides != nil { layering.insert(.overrides) }
            if secrets?.values.isEmpty == false { layering.insert(.secrets) }
            if readOnlyReason != nil || systemFiles?.locks.isEmpty == false { layering.insert(.refusals) }
            if migrations?.entries.isEmpty == false { layering.insert(.migrations) }
            self.layering = layering
        }

        /// Why a write of `name` is refused; `nil` when it is not.
        ///
        /// A removal (`isRemoval`) of a secret's name is not refused: it removes only what was stored
        /// under the name before it was secret, which no read sees.
        func refusal(ofWriteTo name: String, isRemoval: Bool = false) -> Defaults.Suite.WriteRefusal? {
            if !isRemoval, layering.contains(.secrets), secrets!.contains(name) {
                return .secret(secrets!.fileURL(of: name))
            }
            guard layering.contains(.refusals) else { return nil }
            if let readOnlyReason { return .readOnly(readOnlyReason) }
            if layering.contains(.systemFiles), let index = systemFiles!.locks[name] {
                return .locked(by: systemFiles!.layers[index].url)
            }
            return nil
        }

        /// The value a read of `name` decodes before this run's overrides, where the user's
        /// layer holds `stored`: a secret's, or a locked key's system value, or else the user's
        /// (or what a migration read through makes of it), or else a system file's.
        func seen(_ name: String, stored: JSONValue?) -> JSONValue? {
            guard !layering.isDisjoint(with: .seenByReads) else { return stored }
            if layering.contains(.secrets), let secret = secrets!.values[name] { return secret }
            let user = layering.contains(.migrations) ? migrations!.seen(name, stored: stored) : stored
            guard layering.contains(.systemFiles) else { return user }
            return systemFiles!.seen(name, stored: user)
        }

        /// Every key's value as reads see it before this run's overrides: ``seen(_:stored:)`` of
        /// every key set somewhere, where the user's layer holds `stored`.
        func seen(stored: [String: JSONValue]) -> [String: JSONValue] {
            guard !layering.isDisjoint(with: .seenByReads) else { return stored }
            var user = stored
            if layering.contains(.migrations) {
                for (name, entry) in migrations!.entries where stored[name] == entry.basedOn {
                    user[name] = entry.value
                }
            }
            var seen = layering.contains(.systemFiles) ? systemFiles!.seen(stored: user) : user
            guard layering.contains(.secrets) else { return seen }
            for (name, secret) in secrets!.values { seen[name] = secret }
            return seen
        }

        /// Whether `name` is a secret key.
        func isSecret(_ name: String) -> Bool {
            layering.contains(.secrets) && secrets!.contains(name)
        }

        /// Whether a system file locks `name`, or it is a secret key: reads see neither the user's
        /// value nor this run's overrides, and writes are refused.
        func isLocked(_ name: String) -> Bool {
            layering.contains(.systemFiles) && systemFiles!.locks[name] != nil
                || layering.contains(.secrets) && secrets!.contains(name)
        }

        /// Whether a change of `name` is reported: not when this run overrides it, as reads of it
        /// return the override, which did not change.
        mutating func reportsChange(of name: String) -> Bool {
            !layering.contains(.overrides) || !overrides!.overrides(name)
        }

        /// The changes of `changes` that are reported (``reportsChange(of:)``).
        mutating func reported<Change>(_ changes: [String: Change]) -> [String: Change] {
            layering.contains(.overrides) ? overrides!.reportable(changes) : changes
        }

        /// This run's overrides of `name` still in force, strongest first.
        mutating func overrideCandidates(for name: String) -> [Overrides.Candidate] {
            layering.contains(.overrides) ? overrides!.candidates(for: name) : []
        }
    }
}

extension Store.State {
    /// The value a read of `name` decodes before this run's overrides: a locked key's system
    /// value, or else the user's, or else a system file's (``Store/Layered/seen(_:stored:)``).
    mutating func layeredValue(named name: String) -> JSONValue? {
        // Read first, on a line of its own: as an argument, the values' mutating accessor
        // overlapped the call's borrow of `self`, and the whole state was copied for it.
        let stored = storedValue(named: name)
        guard !layered.layering.isDisjoint(with: .seenByReads) else { return stored }
        return layered.seen(name, stored: stored)
    }
}
