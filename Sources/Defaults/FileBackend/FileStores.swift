import Foundation
import Synchronization

/// The file-backed stores of this process, by the path of their file as given (and those of their
/// system files): one per path.
///
/// By the path as given, not where it leads: a store follows its path, so a suite on a link and a
/// suite on the file the link leads to now part ways when the link is re-pointed.
enum FileStores {
    private final class WeakStore: @unchecked Sendable {  // only the weak reference, read under the lock
        weak var store: Store?
        init(_ store: Store) { self.store = store }
    }

    private static let stores = Lock<[String: WeakStore]>([:])
    /// Broadcast whenever a file store goes away, for ``waitUntilNoStore(under:until:)``.
    private static let gone = NSCondition()
    /// How many file stores went away; read and changed only under ``gone``.
    nonisolated(unsafe) private static var goneCount = 0

    /// Tells those waiting in ``waitUntilNoStore(under:until:)`` that a store went away.
    static func storeWentAway() {
        gone.lock()
        goneCount += 1
        gone.broadcast()
        gone.unlock()
    }

    /// Waits until no store of a file under `directory` is alive (so none will write there again),
    /// or until `deadline`.
    ///
    /// - Returns: The paths of the stores still alive at the deadline; empty when none is.
    static func waitUntilNoStore(under directory: String, until deadline: Date) -> [String] {
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        while true {
            gone.lock()
            let seen = goneCount
            gone.unlock()
            // NB: looked at holding no lock: loading a weak reference makes a strong one, which
            // may be the store's last, so its `deinit` (and `storeWentAway`) can run right here.
            let entries = stores.withLock { stores in stores.filter { $0.key.hasPrefix(prefix) } }
            let alive = entries.compactMap { key, entry in entry.store != nil ? key : nil }
            if alive.isEmpty { return [] }
            gone.lock()
            defer { gone.unlock() }
            // NB: a store gone since `seen` was read has counted: no wait then.
            while goneCount == seen {
                if !gone.wait(until: deadline) { return alive }
            }
        }
    }

    private static let installExitHandler: Void = {
        atexit { FileStores.flushAll() }
    }()

    /// The key a store is found by: the path of its file, and those of the system files beneath it.
    private static func key(_ storage: FileStorage, _ layers: [FileStorage]) -> String {
        layers.reduce(storage.givenPath) { $0 + "\n" + $1.givenPath }
    }

    /// The store of the file at `url` over the system files `systemFiles`, loading the files if no
    /// suite has them open.
    ///
    /// - Returns: The store, and what its opener must be told: what loading found wrong, and that
    ///   the file can only be polled, when this call loaded it.
    static func store(for url: URL, systemFiles: [URL] = []) -> (store: Store, problems: [Defaults.StorageError]) {
        _ = installExitHandler
        let storage = FileStorage(url: url)
        let layerFiles = systemFiles.map { FileStorage(url: $0, isWritten: false) }
        let key = key(storage, layerFiles)
        if let open = stores.withLock({ $0[key]?.store }) { return (open, []) }
        // NB: loaded outside the registry lock: loading a corrupt file takes the file's lock, which
        // another thread may hold while it opens a suite.
        var problems: [Defaults.StorageError] = []
        let file = FileBackend(storage: storage, layerFiles: layerFiles)
        let loaded = file.load(problems: &problems)
        let fresh = Store(
            backend: .backend(CustomBackend(file)),
            contents: loaded.contents,
            layers: loaded.layers,
            readOnlyReason: storage.readOnlyReason
        )
        let winner = stores.withLock { stores -> Store? in
            if let open = stores[key]?.store { return open }
            stores = stores.filter { $0.value.store != nil }
            stores[key] = WeakStore(fresh)
            return nil
        }
        // NB: the loser's reports still go out: its load may be what moved a corrupt file aside.
        if let winner { return (winner, problems) }
        file.attach(fresh)
        let polling = file.startReporting(to: fresh.makeUpdates(), returningPollingReports: ())
        return (fresh, problems + polling)
    }

    /// Flushes every open file store; run at a normal exit.
    static func flushAll() {
        let open = stores.withLock { $0.values.compactMap(\.store) }
        for store in open {
            guard case .failure(let error) = store.flushNow() else { continue }
            // NB: now, on this thread: a queue would not run again before the process ends.
            for handler in store.errorHandlers { handler(error) }
        }
    }
}
