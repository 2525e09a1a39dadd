import Foundation

extension StoreRegistry {
    /// The store of the file at `url` over the system files `systemFiles`, loading the files if no
    /// suite has them open.
    ///
    /// - Returns: The store, and what its opener must be told: what loading found wrong (also when
    ///   another thread's store won: this load may be what moved a corrupt file aside), and that
    ///   the file can only be polled, when this call loaded it.
    static func store(for url: URL, systemFiles: [URL] = []) -> (store: Store, problems: [Defaults.StorageError]) {
        let storage = FileStorage(url: url)
        let system = SystemFiles(systemFiles)
        let place = Place.file(system.files.reduce(storage.givenPath) { $0 + "\n" + $1.givenPath })
        let (store, opened, isNew) = self.store(at: place) { () -> (Store, (FileBackend, [Defaults.StorageError])) in
            var problems: [Defaults.StorageError] = []
            let file = FileBackend(storage: storage)
            let contents = file.load(problems: &problems)
            let layers = system.load(problems: &problems)
            let fresh = Store(
                backend: .backend(BackendConnection(file)),
                contents: contents,
                systemFiles: system,
                layers: layers,
                readOnlyReason: storage.readOnlyReason
            )
            return (fresh, (file, problems))
        }
        guard let (file, problems) = opened else { return (store, []) }
        guard isNew else { return (store, problems) }
        let polling = file.startReporting(to: store.makeUpdates(), returningPollingReports: (), attaching: true)
        return (store, problems + polling + (store.systemFiles?.follow(for: store) ?? []))
    }
}
