import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The one place that reads and writes a suite's file.
///
/// Every replacement is atomic: the new content goes to a temporary file created with mode 0600 in
/// the same directory, is flushed with `fsync`, renamed over the old file, and the directory is
/// flushed too. Directories it creates get mode 0700. Writers hold ``lock``; readers take no lock.
final class FileStorage: Sendable {
    /// The file as the suite was given it.
    let url: URL
    /// ``url``'s path, as given: reads open it, so they follow whatever links are on the way now.
    let givenPath: String
    /// Serialises read-merge-replace cycles, in this process and across processes.
    let lock = FileLock()
    /// Where ``givenPath`` leads, as last resolved, and whether this process may write there.
    private let location: Lock<Location>
    /// Where the path led when the exclusive lock was last taken: what a writer reads, replaces and
    /// moves aside while it holds the lock, whatever links change meanwhile.
    let held: Lock<ResolvedPath>
    /// Told when ``resolveAgain()`` finds the file elsewhere (the store that owns this file).
    private let moveHandler = Lock<(@Sendable (Location) -> Void)?>(nil)
    private let replacements = Atomic<Int>(0)
    /// How many holders keep this file's broken-file retries going (see
    /// `Defaults.Suite.holdingBrokenFileRetries`).
    let retriesHeld = Atomic<Int>(0)
    /// Set by a replacement whose directory entry is not flushed yet (to that directory): that
    /// `fsync` waits until the file lock is released, since other processes' writers need only the
    /// rename, not its durability (this process's threads still wait for it).
    private let directoryToSync = Lock<String?>(nil)

    /// Where the file is, as last resolved.
    struct Location: Equatable, Sendable {
        /// The given path with every symlink followed: where the file is written, locked and watched.
        var resolved: ResolvedPath
        /// Why this process may not write the file there; `nil` when it may.
        var readOnlyReason: String?

        init(_ path: String, isWritten: Bool) {
            resolved = ResolvedPath.resolve(path)
            readOnlyReason = isWritten ? resolved.readOnlyReason : nil
        }
    }

    /// The number of times the file has been replaced; tests use it to check coalescing.
    var replacementCount: Int { replacements.load(ordering: .relaxed) }

    /// Whether this file is ever written: a system file beneath a suite's own is only read, so
    /// whether this process may write it is never asked.
    private let isWritten: Bool

    /// - Parameters:
    ///   - url: The file.
    ///   - isWritten: Whether it is written (a suite's own file), or only read (a system file).
    init(url: URL, isWritten: Bool = true) {
        self.givenPath = ResolvedPath.normalize(url.path)
        self.url = url.path == givenPath ? url : URL(fileURLWithPath: givenPath, isDirectory: false)
        self.isWritten = isWritten
        let location = Location(givenPath, isWritten: isWritten)
        self.location = Lock(location)
        self.held = Lock(location.resolved)
    }

    /// Calls `handler` whenever ``resolveAgain()`` finds the file elsewhere, or finds that whether
    /// it may be written changed.
    func whenMoved(_ handler: @escaping @Sendable (Location) -> Void) {
        moveHandler.withLock { $0 = handler }
    }

    /// Where the file is, as last resolved (see ``resolveAgain()``).
    var current: Location { location.withLock { $0 } }

    /// The file's path with every symlink resolved, as last resolved: where it is written, locked
    /// and watched.
    var path: String { current.resolved.path }

    /// Why this process may not write the file, as last looked; `nil` when it may.
    var readOnlyReason: String? { current.readOnlyReason }

    /// Follows the given path again, and looks again whether the file may be written.
    ///
    /// - Returns: The new location when it differs from the last one.
    @discardableResult
    func resolveAgain() -> Location? {
        let now = Location(givenPath, isWritten: isWritten)
        let moved = location.withLock { location -> Bool in
            guard location != now else { return false }
            location = now
            return true
        }
        guard moved else { return nil }
        moveHandler.withLock { $0 }?(now)
        return now
    }

    // MARK: - Locking

    /// Takes the file's exclusive lock (see ``FileLock``); balance it with ``unlockExclusively()``.
    ///
    /// - Throws: `writeFailed` naming this file, when the lock file cannot be created or locked.
    ///
    /// The path is resolved again first: the lock file, and the file read and replaced under the
    /// lock, are where the links on the way lead now, and stay so until the lock is released.
    func lockExclusively() throws(Defaults.StorageError) {
        _ = try lockExclusively(waits: true)
    }

    /// ``lockExclusively()``; when `waits` is `false` and another process holds the lock, returns
    /// `false` at once, holding nothing.
    private func lockExclusively(waits: Bool) throws(Defaults.StorageError) -> Bool {
        var lockPath = ""
        var target: ResolvedPath?
        do {
            let taken = try lock.lockExclusively(
                path: {
                    resolveAgain()
                    target = current.resolved
                    lockPath = target!.path + ".lock"
                    return lockPath
                },
                waits: waits
            )
            guard let taken else { return false }
            // Only once the thread lock is held: another thread waiting for it must not change
            // what the holder reads and replaces.
            if taken, let target { held.withLock { $0 = target } }
            return true
        } catch {
            throw .writeFailed(url: url, reason: "locking \(lockPath): \(error.description)")
        }
    }

    /// Releases what ``lockExclusively()`` took, making a replacement made under it durable.
    ///
    /// - Parameter work: Runs once other processes may lock the file again (and the replacement is
    ///   durable), but before other threads of this process may; inside an outer hold of the lock,
    ///   which this release does not end, it runs with the lock still held.
    func unlockExclusively(then work: () -> Void = {}) {
        var ran = false
        lock.unlockExclusively { [self] in
            if let directory = directoryToSync.withLock({ $0.take() }) {
                let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if descriptor >= 0 {
                    fsync(descriptor)
                    close(descriptor)
                }
            }
            work()
            ran = true
        }
        // Not the outermost release: the thread lock is still this thread's, held outside.
        if !ran { work() }
    }

    /// Runs `body` holding the file's exclusive lock; the lock is released on every path.
    ///
    /// - Parameters:
    ///   - afterward: Work for the release, as ``unlockExclusively(then:)`` does it.
    ///   - body: The work done under the lock.
    func withExclusiveLock<Result>(
        afterward: () -> Void = {},
        _ body: () throws(Defaults.StorageError) -> Result
    ) throws(Defaults.StorageError) -> Result {
        try lockExclusively()
        defer { unlockExclusively(then: afterward) }
        return try body()
    }

    /// Runs `body` under the exclusive lock when no other process holds it now; `nil`, at once,
    /// when one does (a process stopped while it held the lock holds it until it goes on).
    func withExclusiveLockIfFree<Result>(
        _ body: () throws(Defaults.StorageError) -> Result
    ) throws(Defaults.StorageError) -> Result? {
        guard try lockExclusively(waits: false) else { return nil }
        defer { unlockExclusively() }
        return try body()
    }

    // MARK: - Writing

    /// Replaces the file, atomically, with `document`; the caller holds the exclusive lock.
    ///
    /// Temporary files left by writers of this file that were killed are removed first. The new
    /// directory entry is flushed to disk when the lock is released.
    ///
    /// - Parameter record: The record of migrations as the file last held it, written back as
    ///   it was, unparsed (`document` has no member named `""` then).
    /// - Returns: The file as written.
    func replace(
        with document: [String: JSONValue],
        keepingRecord record: DeferredJSON? = nil
    ) throws(Defaults.StorageError) -> Snapshot {
        var bytes: [UInt8]
        var recordRange: Range<Int>?
        if let record {
            (bytes, recordRange) = JSONWriter.prettyBytes(document, recordText: record.document[record.range])
        } else {
            bytes = JSONWriter.prettyBytes(.object(document))
        }
        // Where the lock was taken, whatever links changed since: the file read is the one replaced.
        let target = held.withLock { $0 }
        if let refusal = Self.sizeRefusal(of: bytes.count) { throw .writeFailed(url: url, reason: refusal) }
        do {
            try createDirectory(target.directory)
            removeTemporaryFilesOfKilledWriters(in: target)
            try writeAtomically(bytes, to: target)
        } catch {
            throw .writeFailed(url: url, reason: error.description)
        }
        replacements.add(1, ordering: .relaxed)
        return Snapshot(bytes: bytes, members: document, deferredRecord: recordRange)
    }

    /// Why a file of `size` bytes is not written, or `nil` when it may be: one larger than a
    /// settings file may be could be read by nobody (every later read and write of the suite would
    /// be refused), and one larger than this process may write (`ulimit -f`) would be cut off by
    /// the system's SIGXFSZ, which kills the process.
    static func sizeRefusal(of size: Int) -> String? {
        let limit = FileSizeLimit.settings
        if size > limit.bytes {
            return
                "it would be \(size) bytes, larger than \(limit.shown), the most \(limit.kind) may be; the file is left as it was"
        }
        #if canImport(Glibc)
        let resource = Int32(RLIMIT_FSIZE.rawValue)
        #else
        let resource = RLIMIT_FSIZE
        #endif
        var fileSize = rlimit()
        if getrlimit(resource, &fileSize) == 0, fileSize.rlim_cur != rlim_t.max,
            UInt64(size) > UInt64(fileSize.rlim_cur)
        {
            return
                "it would be \(size) bytes, larger than this process may write (its file size limit, ulimit -f, is \(fileSize.rlim_cur) bytes); the file is left as it was"
        }
        return nil
    }

    /// The prefix of the temporary files of the file at `target`; the writer's pid follows it.
    private static func temporaryPrefix(_ target: ResolvedPath) -> String { "." + target.fileName + ".tmp-" }

    private func writeAtomically(_ bytes: [UInt8], to target: ResolvedPath) throws(SystemError) {
        let temporary =
            WatchTable.join(target.directory, Self.temporaryPrefix(target))
            + "\(getpid())-\(UInt32.random(in: .min ... .max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SystemError.current("creating a temporary file") }
        var succeeded = false
        defer {
            if !succeeded { unlink(temporary) }
        }
        do {
            defer { close(descriptor) }
            // The umask could narrow the mode further, never widen it; make it exact.
            guard fchmod(descriptor, 0o600) == 0 else { throw SystemError.current("setting the file mode") }
            try writeAll(bytes, to: descriptor)
            guard fsync(descriptor) == 0 else { throw SystemError.current("flushing the temporary file") }
        }
        guard rename(temporary, target.path) == 0 else { throw SystemError.current("renaming into place") }
        succeeded = true
        directoryToSync.withLock { $0 = target.directory }
    }

    private func writeAll(_ bytes: [UInt8], to descriptor: Int32) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw SystemError.current("writing")
            }
            offset += written
        }
    }

    /// Removes temporary files of this file left by writers that were killed mid-write.
    ///
    /// Called with the exclusive lock held. Every writer of this file makes its temporary file
    /// while holding that lock, and removes or renames it before letting go, so none found now
    /// belongs to a writer still at work: each was left by one that died (its name holds the pid
    /// that made it, for a person who looks).
    private func removeTemporaryFilesOfKilledWriters(in target: ResolvedPath) {
        let directory = target.directory
        guard let stream = opendir(directory) else { return }
        defer { closedir(stream) }
        let prefix = Self.temporaryPrefix(target)
        while let entry = readdir(stream) {
            // The name in place, up to its NUL. Copying `d_name` (256 bytes) read past the end
            // of a short entry at the end of readdir's buffer: the fuzzer's AddressSanitizer found it.
            let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if name.hasPrefix(prefix) { unlink(WatchTable.join(directory, name)) }
        }
    }
}

/// A failed system call: the operation and `errno`; or a file refused for what it is.
struct SystemError: Error, CustomStringConvertible {
    var operation: String
    var code: Int32
    /// Why the file was refused, when no call failed (``FileKind``, ``FileSizeLimit``).
    var refusal: String?

    init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    /// A file refused for what it is, or for its size: `refusal` says which.
    init(operation: String, refusal: String) {
        self.operation = operation
        self.code = 0
        self.refusal = refusal
    }

    static func current(_ operation: String) -> SystemError {
        SystemError(operation: operation, code: errno)
    }

    var description: String { "\(operation): \(refusal ?? String(cString: strerror(code)))" }
}

extension Defaults {
    /// Parses a settings file's bytes as a suite does when it reads the file, and nothing more.
    ///
    /// For the benchmarks only (the floor under taking in a change another process wrote): not
    /// part of the public API, and free to change.
    ///
    /// - Returns: The number of the document's top-level members; `nil` when it is not a JSON object.
    @_spi(Benchmarks)
    public static func _parseSettingsFile(_ bytes: [UInt8]) -> Int? {
        guard let members = try? FileStorage.members(of: bytes) else { return nil }
        return members.count
    }
}
