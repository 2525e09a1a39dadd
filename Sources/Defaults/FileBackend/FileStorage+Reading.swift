import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension FileStorage {
    // MARK: - Reading

    /// What reading the file found.
    enum ReadResult {
        /// There is no file (or a parent of it is not a directory).
        case missing
        /// The same bytes as the snapshot the caller knew, which is returned (nothing was parsed).
        case unchanged(Snapshot)
        /// A JSON object, other than the one the caller knew.
        case parsed(Snapshot)
        /// The file is there but is not a JSON object: why.
        case broken(reason: String)
        /// The file could not be read.
        case unreadable(Defaults.StorageError)

        /// What a file's change machine is told this read found.
        ///
        /// - Parameter wasThere: Whether a file was there before (read, or there but unreadable):
        ///   gone where there was none is no change.
        func finding(wasThere: Bool) -> FileChangeMachine.Finding {
            switch self {
            case .unreadable: .unreadable
            case .unchanged: .unchanged
            case .missing: wasThere ? .missing : .unchanged
            case .parsed: .parsed
            case .broken: .broken
            }
        }
    }

    /// Reads and parses the file, without taking any lock.
    ///
    /// Writers replace it by rename, so this sees one whole version of it. It opens the path as
    /// given, so it reads the file that the links on the way lead to at that moment.
    ///
    /// - Parameters:
    ///   - known: The version the caller last saw; when the file still holds those bytes, it is
    ///     not parsed again.
    ///   - locked: The caller holds the exclusive lock: read the file it locked (see
    ///     ``lockExclusively()``), which it is about to replace.
    func read(knowing known: Snapshot? = nil, locked: Bool = false) -> ReadResult {
        let bytes: [UInt8]
        let path = locked ? held.withLock { $0.path } : givenPath
        do throws(SystemError) {
            guard let read = try Self.contents(atPath: path, directoryIsMissing: true) else { return .missing }
            bytes = read
        } catch {
            return .unreadable(.unreadableFile(url: url, reason: error.description))
        }
        if let known, Self.sameBytes(known.bytes, bytes) { return .unchanged(known) }
        // Most changes change a few members of many: only those are parsed and compared.
        if let known, let changed = Self.parseChange(of: known, to: bytes) { return .parsed(changed) }
        do {
            if let snapshot = try Self.snapshot(of: bytes) { return .parsed(snapshot) }
            return .broken(reason: "the top level is not a JSON object")
        } catch {
            return .broken(reason: bytes.isEmpty ? "the file is empty" : error.description)
        }
    }

    /// ``read(knowing:)``, looking again a few times over about 300 milliseconds while the file is
    /// broken, before the caller treats it as corrupt.
    ///
    /// An editor that rewrites a file in place can be caught half-way; so can one that closes the
    /// file between writes. Blocks the calling thread only while the file is broken.
    func readSettled(knowing known: Snapshot? = nil, locked: Bool = false) -> ReadResult {
        var result = read(knowing: known, locked: locked)
        guard Self.waitsForBrokenFilesToSettle.load(ordering: .relaxed) else { return result }
        var delays = FileChangeMachine.retryDelays.makeIterator()
        while case .broken = result {
            // While a test holds retries, looking again never ends (see FileChangeMachine).
            let held = retriesAreHeld
            guard let delay = held ? FileChangeMachine.retryDelays[0] : delays.next() else { break }
            usleep(UInt32(delay.nanoseconds / 1_000))
            result = read(knowing: known, locked: locked)
        }
        return result
    }

    /// Whether a file found missing or broken is looked at again and again, never acted on.
    var retriesAreHeld: Bool { retriesHeld.load(ordering: .acquiring) > 0 }

    /// Whether ``readSettled(knowing:)`` looks again while a file is broken; the fuzz target turns
    /// it off, since every other input it makes is broken and would wait 300 ms.
    static let waitsForBrokenFilesToSettle = Atomic<Bool>(true)

    /// What opening the file found.
    enum LoadResult {
        /// The file as read (none when there is no file yet).
        case loaded(Snapshot?)
        /// The file was corrupt and moved aside; start from defaults.
        case movedAside(Defaults.StorageError)
        /// The file is there but could not be read or moved: never write over it.
        case unreadable(Defaults.StorageError)
        /// The file is corrupt and read-only: left as it is; start from defaults.
        case brokenReadOnly(Defaults.StorageError)
    }

    /// Reads the file for a suite being opened; a corrupt file is moved aside under the lock,
    /// unless this process may not write it.
    func load() -> LoadResult {
        var result = read()
        if case .broken(let reason) = result, readOnlyReason != nil {
            return .brokenReadOnly(.corruptFileLeftInPlace(url: url, reason: reason))
        }
        // A symlink leads to a file of someone else's choosing, maybe no settings file at all
        // (`/etc/passwd`): nothing is moved, written or locked beside it.
        if case .broken(let reason) = result, isLink { return .unreadable(leftBehindLink(reason: reason)) }
        if case .broken = result {
            // Under the lock, and read again (for a while): another process may have just
            // replaced it, or an editor may be half-way through saving it.
            let locked = (try? lockExclusively()) != nil
            defer { if locked { unlockExclusively() } }
            if locked { result = readSettled(locked: true) }
            if case .broken(let reason) = result {
                switch moveAside(reason: reason) {
                case .success(let report): return .movedAside(report)
                case .failure(let report): return .unreadable(report)
                }
            }
        }
        switch result {
        case .parsed(let snapshot), .unchanged(let snapshot): return .loaded(snapshot)
        case .unreadable(let error): return .unreadable(error)
        case .missing, .broken: return .loaded(nil)  // A broken file was dealt with above.
        }
    }

    /// Whether the file's own path is a symlink (links of the folders on the way do not count).
    var isLink: Bool {
        var info = stat()
        return lstat(givenPath, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    /// Why a file that does not parse, reached through the symlink that is the settings file, is
    /// left as it is.
    func leftBehindLink(reason: String) -> Defaults.StorageError {
        .unreadableFile(
            url: url,
            reason:
                "\(reason); it is a symlink, so the file it leads to is left as it is, and not written over until it holds settings"
        )
    }

    /// Renames a corrupt file to `<file>.corrupt-<timestamp>`, keeping its bytes as they are; the
    /// caller holds the exclusive lock.
    ///
    /// - Returns: The `corruptFile` report on success; an `unreadableFile` one when it could not be moved.
    func moveAside(reason: String) -> Result<Defaults.StorageError, Defaults.StorageError> {
        // A settings file that is a symlink leads to a file of someone else's choosing, maybe
        // not a settings file at all (`/etc/passwd`): a file it leads to that does not parse is
        // left where it is, unread and never written over, rather than renamed in its folder.
        if isLink { return .failure(leftBehindLink(reason: reason)) }
        let path = held.withLock { $0.path }
        var stamp = Date.now.formatted(
            Date.ISO8601FormatStyle(dateSeparator: .omitted, timeSeparator: .omitted).year().month().day()
                .time(includingFractionalSeconds: false)
        )
        stamp.removeAll { $0 == "T" }
        var destination = URL(fileURLWithPath: path + ".corrupt-" + stamp)
        var attempt = 1
        while access(destination.path, F_OK) == 0 {
            attempt += 1
            destination = URL(fileURLWithPath: path + ".corrupt-" + stamp + "-\(attempt)")
        }
        guard rename(path, destination.path) == 0 else {
            let failure = SystemError.current("moving the corrupt file aside")
            return .failure(.unreadableFile(url: url, reason: "\(reason); \(failure)"))
        }
        return .success(.corruptFile(url: url, movedTo: destination, reason: reason))
    }

    /// The whole file at `path`, read without any lock, if it is a regular file of at most
    /// `limit`'s size.
    ///
    /// `nil` when there is none (or a parent is not a directory, or a link on the way leads
    /// nowhere) and, with `directoryIsMissing`, when a directory stands in its place; the `defaults`
    /// command reports a directory instead.
    ///
    /// It never blocks: the path is opened without waiting (a FIFO's `open` would wait for a
    /// writer), and what it leads to is looked at before a byte is read. A FIFO, a device (`/dev/zero`
    /// never ends), a socket, a directory (unless `directoryIsMissing`), a loop of links, or a file
    /// larger than `limit` is refused: the error says which, and never holds the file's contents.
    static func contents(
        atPath path: String,
        directoryIsMissing: Bool,
        limit: FileSizeLimit = .settings
    ) throws(SystemError) -> [UInt8]? {
        // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; O_NOCTTY: a terminal
        // opened here never becomes the process's. Neither changes how a regular file reads.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        if descriptor < 0 {
            // ENOTDIR: a parent is a regular file, so there is no file yet either; writing
            // reports that obstacle, and succeeds once it is gone.
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw FileKind.openingFailure(atPath: path)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError.current("examining") }
        // A directory in the file's place holds no settings; writing reports that obstacle
        // (a rename cannot replace a directory, so nothing in it is at risk).
        if directoryIsMissing, (info.st_mode & S_IFMT) == S_IFDIR { return nil }
        if let refusal = FileKind.refusal(of: info.st_mode) {
            throw SystemError(operation: "opening", refusal: refusal)
        }
        let expected = Int(info.st_size)
        guard expected <= limit.bytes else { throw limit.exceeded }
        // Into uninitialized memory, one byte more than expected to see the end: the array is not
        // zeroed first, which would touch every byte twice (`defaults-profile absorb10k`).
        var failure: Int32 = 0
        var reachedEnd = false
        var result = [UInt8](unsafeUninitializedCapacity: max(expected, 0) + 1) { buffer, initialized in
            while initialized < buffer.count {
                let read = Glibc.read(descriptor, buffer.baseAddress! + initialized, buffer.count - initialized)
                if read < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                if read == 0 {
                    reachedEnd = true
                    return
                }
                initialized += read
            }
        }
        if failure != 0 { throw SystemError(operation: "reading", code: failure) }
        if reachedEnd { return result }
        // The file grew since `fstat`: the rest, a block at a time, up to the limit.
        var count = result.count
        while true {
            guard count <= limit.bytes else { throw limit.exceeded }
            if count == result.count {
                result.append(contentsOf: repeatElement(0, count: min(max(result.count, 4096), limit.bytes + 1)))
            }
            let read = result.withUnsafeMutableBytes { buffer in
                Glibc.read(descriptor, buffer.baseAddress! + count, buffer.count - count)
            }
            if read < 0 {
                if errno == EINTR { continue }
                throw SystemError.current("reading")
            }
            if read == 0 {
                result.removeSubrange(count...)
                return result
            }
            count += read
        }
    }

    /// The top-level members of a settings document; `nil` when its top level is not an object.
    static func members(of bytes: [UInt8]) throws(JSONParser.Failure) -> [String: JSONValue]? {
        // RFC 8259 lets a reader ignore a byte order mark; editors sometimes add one. Copied only
        // then, so a file without one is parsed where it lies (`defaults-profile absorb10k`).
        let document = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        guard case .object(let members) = try JSONParser.parse(document) else { return nil }
        return members
    }

    /// Whether two versions of the file hold the same bytes.
    ///
    /// `memcmp`: `==` on two arrays of bytes compares them one element at a time, which cost a
    /// tenth of taking in a changed 10,000-key file.
    static func sameBytes(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in
                left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }
    }
}
