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
///   one file take turns, whatever thread they run on;
/// - **across processes**, an exclusive `flock` on a lock file beside the settings file
///   (`settings.json.lock`, mode 0600), taken on top of the thread lock by writers only. The data file
///   itself is never locked: it is replaced by rename, so a lock on it would lock a file that is gone.
///   The lock file's path is given when the lock is taken: a settings file reached through symlinks
///   is locked where they lead at that moment.
///
/// Both are recursive on one thread, so a cross-process transaction whose body calls
/// `synchronize()` does not wait for itself.
final class FileLock: @unchecked Sendable {  // `depth` and `descriptor` change only under `threads`
    private let threads = NSRecursiveLock()
    /// How many times the current holder of `threads` took the file lock.
    private var depth = 0
    private var descriptor: Int32 = -1

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
    /// Every call that returns must be balanced by ``unlockExclusively()`` on the same thread.
    /// Inside an outer hold, `path` is not looked at: the outer hold's lock file stays locked.
    ///
    /// - Parameter path: The lock file, asked for only when the file lock is not held yet.
    /// - Throws: ``SystemError`` when the lock file cannot be created or locked.
    func lockExclusively(path: () -> String) throws(SystemError) {
        threads.lock()
        if depth == 0 {
            do {
                descriptor = try acquire(path())
            } catch {
                threads.unlock()
                throw error
            }
        }
        depth += 1
    }

    /// Releases what ``lockExclusively()`` took.
    ///
    /// - Parameter afterReleasingFileLock: Work for the outermost release, done once other
    ///   processes may lock the file again but before other threads of this one may: making a
    ///   replacement durable, which other processes need not wait for and this one must.
    func unlockExclusively(afterReleasingFileLock: () -> Void = {}) {
        depth -= 1
        if depth == 0 {
            flock(descriptor, LOCK_UN)
            close(descriptor)
            descriptor = -1
            afterReleasingFileLock()
        }
        threads.unlock()
    }

    /// Opens the lock file at `path`, creating it and its directory when missing, and locks it.
    private func acquire(_ path: String) throws(SystemError) -> Int32 {
        while true {
            try createDirectory((path as NSString).deletingLastPathComponent)
            let opened = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard opened >= 0 else { throw SystemError.current("opening the lock file") }
            // NB: the umask may have narrowed the mode; make it exact. Not our file: leave it be.
            fchmod(opened, 0o600)
            while flock(opened, LOCK_EX) != 0 {
                if errno == EINTR { continue }
                let failure = SystemError.current("locking the lock file")
                close(opened)
                throw failure
            }
            // NB: the directory may have been deleted (and re-created) while this waited: a lock on
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
