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
/// flushed too. Directories it creates get mode 0700.
package final class FileStorage: Sendable {
    /// The file this storage owns.
    package let url: URL
    private let replacements = Atomic<Int>(0)

    /// The number of times the file has been replaced; tests use it to check coalescing.
    package var replacementCount: Int { replacements.load(ordering: .relaxed) }

    package init(url: URL) {
        self.url = url.standardizedFileURL
    }

    /// What loading the file found.
    package enum LoadResult {
        /// The file's top-level members (empty when there is no file yet).
        case loaded([String: JSONValue])
        /// The file was corrupt and moved aside; start from defaults.
        case movedAside(Defaults.StorageError)
        /// The file is there but could not be read or moved: never write over it.
        case unreadable(Defaults.StorageError)
    }

    /// Reads and parses the file.
    package func load() -> LoadResult {
        let bytes: [UInt8]
        do {
            guard let read = try readFile() else { return .loaded([:]) }
            bytes = read
        } catch {
            return .unreadable(.unreadableFile(url: url, reason: error.description))
        }
        let reason: String
        do {
            if let members = try Self.members(of: bytes) {
                return .loaded(members)
            }
            reason = "the top level is not a JSON object"
        } catch {
            reason = bytes.isEmpty ? "the file is empty" : error.description
        }
        return moveAside(reason: reason)
    }

    private func moveAside(reason: String) -> LoadResult {
        var stamp = Date.now.formatted(
            Date.ISO8601FormatStyle(dateSeparator: .omitted, timeSeparator: .omitted).year().month().day()
                .time(includingFractionalSeconds: false)
        )
        stamp.removeAll { $0 == "T" }
        var destination = URL(fileURLWithPath: url.path + ".corrupt-" + stamp)
        var attempt = 1
        while access(destination.path, F_OK) == 0 {
            attempt += 1
            destination = URL(fileURLWithPath: url.path + ".corrupt-" + stamp + "-\(attempt)")
        }
        guard rename(url.path, destination.path) == 0 else {
            let failure = SystemError.current("moving the corrupt file aside")
            return .unreadable(.unreadableFile(url: url, reason: "\(reason); \(failure)"))
        }
        return .movedAside(.corruptFile(url: url, movedTo: destination, reason: reason))
    }

    private func readFile() throws(SystemError) -> [UInt8]? {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            // NB: ENOTDIR: a parent is a regular file, so there is no file yet either; writing
            // reports that obstacle, and succeeds once it is gone.
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw SystemError.current("opening")
        }
        defer { close(descriptor) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemError.current("reading")
            }
            if count == 0 { return result }
            result.append(contentsOf: chunk[0..<count])
        }
    }

    /// Serialises read-merge-write cycles of every file in this process.
    private static let mergeLock = Mutex(())

    /// Replaces the file, atomically, with `members` merged into what the file holds now.
    ///
    /// Only `changedKeys` are taken from `members`; every other key is taken from the file as it is
    /// at this moment, so another suite on the same file does not lose the keys it wrote since this
    /// one loaded. When there is no file, or it no longer parses, all of `members` is written.
    package func write(_ members: [String: JSONValue], changedKeys: Set<String>) throws(Defaults.StorageError) {
        try Self.mergeLock.withLock { _ throws(Defaults.StorageError) in
            var document = members
            if case .loaded(let current) = loadForMerge() {
                document = current
                for name in changedKeys { document[name] = members[name] }
            }
            do {
                try writeAtomically(JSONWriter.prettyBytes(.object(document)))
            } catch let failure as SystemError {
                throw .writeFailed(url: url, reason: failure.description)
            } catch {
                throw .writeFailed(url: url, reason: "\(error)")
            }
        }
        replacements.add(1, ordering: .relaxed)
    }

    /// The file's members for a merge; nothing when it is missing, unreadable or does not parse.
    private func loadForMerge() -> LoadResult? {
        guard let bytes = try? readFile(), let members = try? Self.members(of: bytes) else { return nil }
        return .loaded(members)
    }

    /// The top-level members of a settings document; `nil` when its top level is not an object.
    private static func members(of bytes: [UInt8]) throws(JSONParser.Failure) -> [String: JSONValue]? {
        var document = bytes[...]
        // NB: RFC 8259 lets a reader ignore a byte order mark; editors sometimes add one.
        if document.starts(with: [0xEF, 0xBB, 0xBF]) { document = document.dropFirst(3) }
        guard case .object(let members) = try JSONParser.parse(Array(document)) else { return nil }
        return members
    }

    private func writeAtomically(_ bytes: [UInt8]) throws(SystemError) {
        // NB: a symlinked file (dotfile managers) is replaced where it really lives, keeping the link.
        let target = Self.resolvingSymlink(url.path)
        let directory = (target as NSString).deletingLastPathComponent
        try createDirectory(directory)
        let temporary =
            directory + "/." + (target as NSString).lastPathComponent
            + ".tmp-\(getpid())-\(UInt32.random(in: .min ... .max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SystemError.current("creating a temporary file") }
        var succeeded = false
        defer {
            if !succeeded { unlink(temporary) }
        }
        do {
            defer { close(descriptor) }
            // NB: the umask could narrow the mode further, never widen it; make it exact.
            guard fchmod(descriptor, 0o600) == 0 else { throw SystemError.current("setting the file mode") }
            try writeAll(bytes, to: descriptor)
            guard fsync(descriptor) == 0 else { throw SystemError.current("flushing the temporary file") }
        }
        guard rename(temporary, target) == 0 else { throw SystemError.current("renaming into place") }
        succeeded = true
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
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

    /// The file a symlink at `path` points to (following chains); `path` itself otherwise.
    private static func resolvingSymlink(_ path: String) -> String {
        var current = path
        for _ in 0..<32 {
            var info = stat()
            guard lstat(current, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK else { return current }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink(current, &buffer, buffer.count - 1)
            guard count > 0 else { return current }
            let destination = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current =
                destination.hasPrefix("/")
                ? destination
                : ((current as NSString).deletingLastPathComponent as NSString).appendingPathComponent(destination)
        }
        return current
    }

    /// Creates `path` and its missing parents with mode 0700.
    private func createDirectory(_ path: String) throws(SystemError) {
        var isDirectory = stat()
        if stat(path, &isDirectory) == 0 {
            guard (isDirectory.st_mode & S_IFMT) == S_IFDIR else {
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
}

/// A failed system call: the operation and `errno`.
struct SystemError: Error, CustomStringConvertible {
    var operation: String
    var code: Int32

    static func current(_ operation: String) -> SystemError {
        SystemError(operation: operation, code: errno)
    }

    var description: String { "\(operation): \(String(cString: strerror(code)))" }
}
