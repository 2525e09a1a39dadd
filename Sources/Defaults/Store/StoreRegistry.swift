import Foundation
import Synchronization

/// The stores of this process, one per place values live, so every suite opened on the same
/// place shares one state: a write through one is read at once through the other.
///
/// A file store is found by the path of its file as given (and those of its system files), not
/// where the path leads: a store follows its path, so a suite on a link and a suite on the file
/// the link leads to now part ways when the link is re-pointed. A store over a user's backend is
/// found by the backend object. In-memory suites and `UserDefaults` adapters have stores of their
/// own, kept elsewhere (``UserDefaultsAdapters``).
enum StoreRegistry {
    /// What a store is found by.
    enum Place: Hashable {
        /// The path of a file as given, then those of its system files, one per line.
        case file(String)
        /// A backend object.
        case backend(ObjectIdentifier)
    }

    private static let stores = Lock<[Place: WeakReference<Store>]>([:])
    /// Broadcast whenever a store goes away, for ``waitUntilNoFileStore(under:until:)``.
    private static let gone = NSCondition()
    /// How many stores went away; read and changed only under ``gone``.
    nonisolated(unsafe) private static var goneCount = 0

    private static let installExitHandler: Void = {
        atexit { StoreRegistry.commitAll() }
    }()

    /// The store at `place`, opened with `open` if no suite has it open.
    ///
    /// `open` runs holding no lock: a backend's load is user code, which may open another suite,
    /// and loading a corrupt file takes the file's lock, which another thread may hold while it
    /// opens a suite. Two threads may both open a store then; the first to finish is kept.
    ///
    /// - Returns: The store; what `open` returned besides its store, when it ran (also when its
    ///   store lost to another thread's); and whether the store is the one `open` made, which its
    ///   opener starts.
    static func store<Opened>(
        at place: Place,
        open: () -> (Store, Opened)
    ) -> (store: Store, opened: Opened?, isNew: Bool) {
        _ = installExitHandler
        if let open = stores.withLock({ $0[place]?.object }) { return (open, nil, false) }
        let (fresh, opened) = open()
        let winner = stores.withLock { stores -> Store? in
            if let open = stores[place]?.object { return open }
            stores = stores.filter { $0.value.object != nil }
            stores[place] = WeakReference(fresh)
            return nil
        }
        if let winner { return (winner, opened, false) }
        return (fresh, opened, true)
    }

    /// Tells those waiting in ``waitUntilNoFileStore(under:until:)`` that a store went away.
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
    static func waitUntilNoFileStore(under directory: String, until deadline: Date) -> [String] {
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        while true {
            gone.lock()
            let seen = goneCount
            gone.unlock()
            // Looked at holding no lock: loading a weak reference makes a strong one, which
            // may be the store's last, so its `deinit` (and `storeWentAway`) can run right here.
            let entries = stores.withLock { stores in
                stores.compactMap { place, entry -> (String, WeakReference<Store>)? in
                    guard case .file(let key) = place, key.hasPrefix(prefix) else { return nil }
                    return (key, entry)
                }
            }
            let alive = entries.compactMap { key, entry in entry.object != nil ? key : nil }
            if alive.isEmpty { return [] }
            gone.lock()
            defer { gone.unlock() }
            // A store gone since `seen` was read has counted: no wait then.
            while goneCount == seen {
                if !gone.wait(until: deadline) { return alive }
            }
        }
    }

    /// Commits what every open store has pending; run at a normal exit.
    static func commitAll() {
        let open = stores.withLock { $0.values.compactMap(\.object) }
        for store in open {
            // Once while it lasts: not when a commit or the backend reported the same failure.
            guard case .failure(let error) = store.flushNow(), store.reportsCommitFailure(error) else { continue }
            // Now, on this thread: a queue would not run again before the process ends.
            for handler in store.errorHandlers { handler(error) }
        }
    }
}

extension StoreRegistry {
    /// The store over `backend`, loading it if no suite has it open.
    ///
    /// - Returns: The store; the problem loading found, for the opener to report; and whether the
    ///   store is new, so the opener starts its reports (``Store/startReporting()``) once its suite
    ///   is attached, and a problem the backend reports as it starts reaches that suite's handler.
    ///   A store that lost to another thread's reports nothing: that one's opener does.
    static func store(for backend: any Defaults.Backend) -> (
        store: Store, problem: Defaults.StorageError?, isNew: Bool
    ) {
        let (store, opened, isNew) = self.store(at: .backend(ObjectIdentifier(backend))) {
            () -> (Store, Defaults.StorageError?) in
            var contents: Defaults.BackendContents?
            var problem: Defaults.StorageError?
            do throws(Defaults.StorageError) {
                contents = try backend.load()
            } catch {
                problem = error
            }
            return (Store(backend: .backend(BackendConnection(backend)), contents: contents), problem)
        }
        return (store, isNew ? opened ?? nil : nil, isNew)
    }
}
