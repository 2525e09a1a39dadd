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
        let layerFiles = systemFiles.map { FileStorage(url: $0, isWritten: false) }
        let place = Place.file(layerFiles.reduce(storage.givenPath) { $0 + "\n" + $1.givenPath })
        let (store, opened, isNew) = self.store(at: place) { () -> (Store, (FileBackend, [Defaults.StorageError])) in
            var problems: [Defaults.StorageError] = []
            let file = FileBackend(storage: storage, layerFiles: layerFiles)
            let loaded = file.load(problems: &problems)
            let fresh = Store(
                backend: .backend(BackendConnection(file)),
                contents: loaded.contents,
                layers: loaded.layers,
                readOnlyReason: storage.readOnlyReason
            )
            return (fresh, (file, problems))
        }
        guard let (file, problems) = opened else { return (store, []) }
        guard isNew else { return (store, problems) }
        let polling = file.startReporting(to: store.makeUpdates(), returningPollingReports: (), attaching: true)
        return (store, problems + polling)
    }
}
