import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The lock that serialises everything that reads a settings file and then replaces it.
///
/// Two levels, one lock:
/// - **in this process**, a recursive thread lock: flushes, reloads and cross-process transactions of
///   one state take turns, whatever thread they run on;
/// - **across processes**, an exclusive `flock` on a lock file beside the settings file
///   (`settings.json.lock`, mode 0600), taken on top of the thread lock by writers only. The data file
///   itself is never locked: it is replaced by rename, so a lock on it would lock a file that is gone.
///   The lock file's path is given when the lock is taken: a settings file reached through symlinks
///   is locked where they lead at that moment.
///
/// Both are recursive on one thread, so a cross-process transaction whose body calls
/// `synchronize()` does not wait for itself. The `flock` is the process's one hold of that lock
/// file (``LockFiles``), whichever state takes it: two states of one file (suites opened on it
/// through different paths) take it in turn, and one thread may hold it through both.
final class FileLock: @unchecked Sendable {  // `depth` and `heldPath` change only under `threads`
    private let threads = NSRecursiveLock()
    /// How many times the current holder of `threads` took the file lock.
    private var depth = 0
    /// The lock file held, while `depth` > 0.
    private var heldPath = ""

    init() {}

    /// Runs `body` while no other thread of this process holds this lock.
    ///
    /// Readers use it so a reload never interleaves with this process's own flush. It takes no
    /// file lock: other processes replace the file by rename, so a reader always sees a whole file.
    func withProcessLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        threads.lock()
        defer { threads.unlock() }
        return try body()
    }

    /// Takes the thread lock and the exclusive `flock` of the lock file at `path`, waiting for both.
    ///
    /// Every call that returns must be balanced by ``unlockExclusively(afterReleasingFileLock:)``
    /// on the same thread. Inside an outer hold, `path` is not looked at: the outer hold's lock file
    /// stays locked.
    ///
    /// - Parameters:
    ///   - path: The lock file, asked for (under the thread lock) only when the file lock is not
    ///     held yet.
    ///   - waits: Whether to wait for another process that holds the lock file; when `false` and
    ///     one does, this returns `nil` at once, holding nothing.
    /// - Returns: Whether this took the lock (rather than taking it again inside an outer hold);
    ///   `nil` when it did not wait for another process.
    /// - Throws: ``SystemError`` when the lock file cannot be created or locked.
    @discardableResult
    func lockExclusively(path: () -> String, waits: Bool = true) throws(SystemError) -> Bool? {
        while true {
            threads.lock()
            if depth > 0 {
                depth += 1
                return false
            }
            let lockFile = path()
            let taken: Bool?
            do {
                taken = try LockFiles.shared.acquire(lockFile, waits: waits)
            } catch {
                threads.unlock()
                throw error
            }
            guard let taken else {
                threads.unlock()
                return nil
            }
            if taken {
                heldPath = lockFile
                depth = 1
                return true
            }
            // Another thread of this process holds the lock file, through another state of the
            // file: wait for it without this state's thread lock, which that thread may need.
            threads.unlock()
            LockFiles.shared.wait(whileHeldByAnotherThread: lockFile)
        }
    }

    /// Releases what ``lockExclusively(path:)`` took.
    ///
    /// - Parameter afterReleasingFileLock: Work for the outermost release, done once other
    ///   processes may lock the file again (unless this thread holds it through another state too)
    ///   but before other threads of this one may: making a replacement durable, which other
    ///   processes need not wait for and this one must.
    func unlockExclusively(afterReleasingFileLock: () -> Void = {}) {
        depth -= 1
        if depth == 0 {
            LockFiles.shared.release(heldPath)
            afterReleasingFileLock()
        }
        threads.unlock()
    }
}

/// The lock files this process holds, each locked with one `flock` whichever state took it.
///
/// A second `flock` of one lock file on a new descriptor waits for the first, even in the same
/// thread; so a thread that holds a lock file takes it again here, by count, and other threads of
/// this process wait here for it (without their state's thread lock), not on the file.
final class LockFiles: @unchecked Sendable {  // `held` changes only under `condition`
    /// The table of this process.
    static let shared = LockFiles()

    private struct Hold {
        let thread: UInt
        var count: Int
        /// The locked descriptor; -1 while the holder is still locking it.
        var descriptor: Int32
    }

    private let condition = NSCondition()
    private var held: [String: Hold] = [:]

    /// Locks the lock file at `path` for this thread, waiting for other processes; `false`, at once,
    /// when another thread of this process holds it (see ``wait(whileHeldByAnotherThread:)``);
    /// `nil`, at once, when another process holds it and `waits` is `false`.
    func acquire(_ path: String, waits: Bool = true) throws(SystemError) -> Bool? {
        let thread = UInt(pthread_self())
        condition.lock()
        if let hold = held[path] {
            defer { condition.unlock() }
            guard hold.thread == thread else { return false }
            held[path]!.count += 1
            return true
        }
        held[path] = Hold(thread: thread, count: 1, descriptor: -1)
        condition.unlock()
        // Outside the table's lock: another process may hold the file for a while.
        do {
            guard let descriptor = try Self.lock(path, waits: waits) else {
                condition.lock()
                held[path] = nil
                condition.broadcast()
                condition.unlock()
                return nil
            }
            condition.lock()
            held[path]!.descriptor = descriptor
            condition.unlock()
            return true
        } catch {
            condition.lock()
            held[path] = nil
            condition.broadcast()
            condition.unlock()
            throw error
        }
    }

    /// Returns once no other thread of this process holds the lock file at `path`.
    func wait(whileHeldByAnotherThread path: String) {
        let thread = UInt(pthread_self())
        condition.lock()
        while let hold = held[path], hold.thread != thread { condition.wait() }
        condition.unlock()
    }

    /// Releases one hold of the lock file at `path`; the last one unlocks it.
    func release(_ path: String) {
        condition.lock()
        defer { condition.unlock() }
        guard var hold = held[path] else { return }
        hold.count -= 1
        guard hold.count == 0 else {
            held[path] = hold
            return
        }
        flock(hold.descriptor, LOCK_UN)
        close(hold.descriptor)
        held[path] = nil
        condition.broadcast()
    }

    /// Opens the lock file at `path`, creating it and its directory when missing, and locks it;
    /// `nil` when another process holds it and `waits` is `false`.
    private static func lock(_ path: String, waits: Bool) throws(SystemError) -> Int32? {
        while true {
            try createDirectory((path as NSString).deletingLastPathComponent)
            // O_NONBLOCK: a FIFO in the lock file's place would wait for a writer; it is refused.
            let opened = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o600)
            guard opened >= 0 else { throw SystemError.current("opening the lock file") }
            var kind = stat()
            if fstat(opened, &kind) == 0, let refusal = FileKind.refusal(of: kind.st_mode) {
                close(opened)
                throw SystemError(operation: "opening the lock file", refusal: refusal)
            }
            // The umask may have narrowed the mode; make it exact. Not our file: leave it be.
            fchmod(opened, 0o600)
            while flock(opened, waits ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
                if errno == EINTR { continue }
                if errno == EWOULDBLOCK {
                    close(opened)
                    return nil
                }
                let failure = SystemError.current("locking the lock file")
                close(opened)
                throw failure
            }
            // The directory may have been deleted (and re-created) while this waited: a lock on
            // a file no longer at `path` excludes nobody, so lock the one that is there now.
            var held = stat()
            var current = stat()
            if fstat(opened, &held) == 0, stat(path, &current) == 0, held.st_ino == current.st_ino,
                held.st_dev == current.st_dev
            {
                return opened
            }
            close(opened)
        }
    }
}

/// Creates `path` and its missing parents with mode 0700.
func createDirectory(_ path: String) throws(SystemError) {
    var info = stat()
    if stat(path, &info) == 0 {
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw SystemError(operation: "creating the directory", code: ENOTDIR)
        }
        return
    }
    let parent = (path as NSString).deletingLastPathComponent
    if !parent.isEmpty, parent != path { try createDirectory(parent) }
    if mkdir(path, 0o700) != 0 {
        if errno == EEXIST { return }
        throw SystemError.current("creating the directory")
    }
    chmod(path, 0o700)
}
