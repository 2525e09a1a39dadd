import Foundation

// The secret keys (`Layers/Secrets.swift`): declared by their keys, read from their files outside
// the lock, taken in under it like a system file's change.
extension Store {
    /// The directory secrets are read from now: the one given, or `$CREDENTIALS_DIRECTORY`.
    var secretsDirectory: URL? {
        Secrets(directory: state.withLock { $0.layered.secrets?.directory }).effectiveDirectory
    }

    /// Whether `name` is a secret key.
    func isSecret(_ name: String) -> Bool {
        guard hasSecrets.load(ordering: .acquiring) else { return false }
        return state.withLock { $0.layered.secrets?.contains(name) ?? false }
    }

    /// Starts a reading of the secret files: its number, the directory given (`nil`: the
    /// environment's), the secret names, and the directory to read.
    private func startReadingSecrets() -> (reading: UInt64, given: URL?, names: [String], directory: URL?) {
        state.withLock { state in
            if state.layered.secrets == nil { state.layered.secrets = Secrets(directory: nil) }
            let reading = state.layered.secrets!.startReading()
            let secrets = state.layered.secrets!
            return (reading, secrets.directory, Array(secrets.values.keys), secrets.effectiveDirectory)
        }
    }

    /// Makes `name` a secret key, read from its file in the secrets directory now; a file that
    /// exists and cannot be read is reported to `report`, and the key reads its default.
    func declareSecret(_ name: String, report: (Defaults.StorageError) -> Void) {
        // Read outside the lock; taken in only if the directory given is still the one read from
        // (a `readSecrets(from:)` on another thread meanwhile reads it again, and so does this).
        for _ in 0..<100 {
            let started = startReadingSecrets()
            let found = Self.readSecrets([name], in: started.directory)
            var problems: [Defaults.StorageError] = []
            let taken = takeSecrets { secrets in
                guard secrets.directory == started.given else { return false }
                problems = secrets.take(found, reading: started.reading)
                return true
            }
            guard taken else { continue }
            for problem in problems { report(problem) }
            return
        }
    }

    /// Reads every secret key again from `directory`, unless it is no longer the directory the
    /// suite reads from; for ``SecretFiles``, when a file may have changed.
    func readSecretsAgain(from directory: URL) {
        let started = startReadingSecrets()
        guard started.directory == directory else { return }
        let found = Self.readSecrets(started.names, in: directory)
        var problems: [Defaults.StorageError] = []
        _ = takeSecrets { secrets in
            guard secrets.effectiveDirectory == directory else { return false }
            problems = secrets.take(found, reading: started.reading)
            return true
        }
        for problem in problems { reportInBackground(problem) }
    }

    /// Reads every secret key from `directory` from now on, and reads them all again now.
    ///
    /// The keys whose reads change are reported as one external change. A file that cannot be
    /// read is reported to `report` once, not at every reading while it stays so.
    func readSecrets(from directory: URL, report: (Defaults.StorageError) -> Void) {
        let started = startReadingSecrets()
        let found = Self.readSecrets(started.names, in: directory)
        var problems: [Defaults.StorageError] = []
        _ = takeSecrets { secrets in
            secrets.directory = directory
            // A key declared meanwhile is read from the new directory by its own declaration,
            // which sees the directory changed and reads again.
            problems = secrets.take(found, reading: started.reading)
            return true
        }
        for problem in problems { report(problem) }
    }

    /// Reads the secrets `names` from `directory`, outside any lock.
    private static func readSecrets(
        _ names: [String],
        in directory: URL?
    ) -> [String: Result<JSONValue?, Defaults.StorageError>] {
        var found: [String: Result<JSONValue?, Defaults.StorageError>] = [:]
        for name in names {
            do throws(Defaults.StorageError) {
                found[name] = .success(try Secrets.read(name, in: directory))
            } catch {
                found[name] = .failure(error)
            }
        }
        return found
    }

    /// Changes the secrets with `change` (which returns whether it changed anything), and reports
    /// the keys whose reads change as one external change, as a system file's change is reported.
    ///
    /// - Returns: What `change` returned.
    private func takeSecrets(_ change: (inout Secrets) -> Bool) -> Bool {
        let outcome = state.withLock { state in
            let outcome = state.changeSecrets(change) { SecretFiles(store: self) }
            if outcome?.hasSecrets == true { hasSecrets.store(true, ordering: .releasing) }
            return outcome
        }
        guard let outcome else { return false }
        // Told after the lock: it only queues the work.
        if let follow = outcome.follow { follow.files.follow(follow.names, in: follow.directory) }
        tell(outcome.reads)
        return true
    }
}

extension Store.State {
    /// What ``changeSecrets(_:makingFiles:)`` did.
    struct SecretsChanged {
        /// What reads saw change.
        var reads: Store.ReadsChanged
        /// The secret files to follow from now on, when they changed: who follows them, the
        /// names, and their directory.
        var follow: (files: SecretFiles, names: [String], directory: URL?)?
        /// Whether some key is secret now.
        var hasSecrets: Bool
    }

    /// Changes the secrets with `change`, which returns whether it changed anything.
    ///
    /// Returns `nil` when it changed nothing. `makeFiles` makes who follows the files, the first
    /// time there are some.
    mutating func changeSecrets(
        _ change: (inout Secrets) -> Bool,
        makingFiles makeFiles: () -> SecretFiles
    ) -> SecretsChanged? {
        let before = layered.secrets ?? Secrets(directory: nil)
        var after = before
        guard change(&after) else { return nil }
        var follow: (files: SecretFiles, names: [String], directory: URL?)?
        if after.directory != before.directory || after.values.count != before.values.count {
            if after.files == nil { after.files = makeFiles() }
            follow = (after.files!, Array(after.values.keys), after.effectiveDirectory)
        }
        return SecretsChanged(reads: replaceSecrets(with: after), follow: follow, hasSecrets: !after.values.isEmpty)
    }

    /// Makes `after` the secrets, and returns what reads saw change.
    mutating func replaceSecrets(with after: Secrets) -> Store.ReadsChanged {
        let before = layered.secrets ?? Secrets(directory: nil)
        var names: [String] = []
        for (name, value) in after.values where before.values[name] != .some(value) { names.append(name) }
        // A secret's read is its file's: overrides are passed over (``Store/Layered/isLocked(_:)``).
        return relayer(names) { $0.secrets = after }
    }
}
