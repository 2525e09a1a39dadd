import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which kinds of file are read: regular files only.
///
/// Settings, system files, schemas, caches and secrets are all regular files. Anything else in
/// their place is refused before a byte is read: a FIFO (reading one waits for a writer, and an
/// `open` of one without `O_NONBLOCK` waits too), a character or block device (`/dev/zero` never
/// ends; `/dev/null` reads as empty, which is not what anyone meant), a socket, a directory.
enum FileKind {
    /// Why a file of mode `mode` (as `fstat` gives it) is not read; `nil` for a regular file.
    static func refusal(of mode: mode_t) -> String? {
        let name: String
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: name = "a FIFO (a named pipe)"
        case S_IFCHR: name = "a character device"
        case S_IFBLK: name = "a block device"
        case S_IFSOCK: name = "a socket"
        case S_IFDIR: name = "a directory"
        default: name = "a special file"
        }
        return "it is \(name), not a regular file"
    }

    /// Why opening `path` failed, just now (`errno` is the failed `open`'s): the kind of file,
    /// when that is the reason.
    static func openingFailure(atPath path: String) -> SystemError {
        let failure = SystemError.current("opening")
        var info = stat()
        // ENXIO: a UNIX socket cannot be opened; ELOOP: a link that leads back to itself.
        if failure.code == ENXIO, stat(path, &info) == 0, let refusal = refusal(of: info.st_mode) {
            return SystemError(operation: "opening", refusal: refusal)
        }
        if failure.code == ELOOP {
            return SystemError(operation: "opening", refusal: "a symbolic link on the way leads back to itself")
        }
        return failure
    }
}

/// The most a file of one kind may hold before it is refused unread: no setting or secret is that
/// large, and a file that is (a log written to the wrong path, `/dev/zero` copied) must not fill
/// the memory of every process that reads it.
struct FileSizeLimit: Sendable {
    /// The size, in bytes.
    let bytes: Int
    /// What such a file is, for the refusal: "a settings file".
    let kind: String

    /// A settings file, a system file, a published schema, a cache: 32 MiB.
    static let settings = FileSizeLimit(bytes: 32 << 20, kind: "a settings file")

    /// A secret's file: 64 KiB, far more than a password, a token or a private key takes.
    static let secret = FileSizeLimit(bytes: 64 << 10, kind: "a secret")

    /// The limit, as a person reads it.
    var shown: String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0
            ? "\(bytes >> 20) MiB"
            : bytes >= 1 << 10 && bytes % (1 << 10) == 0 ? "\(bytes >> 10) KiB" : "\(bytes) bytes"
    }

    /// The refusal of a file larger than this.
    var exceeded: SystemError {
        SystemError(operation: "reading", refusal: "it is larger than \(shown), the most \(kind) may be")
    }
}

extension Defaults {
    /// Why ``_contentsOfRegularFile(atPath:isSecret:)`` read nothing: in words, never what the
    /// file holds.
    @_spi(Files)
    public struct _FileReadError: Error, CustomStringConvertible {
        /// What went wrong: "opening: it is a FIFO (a named pipe), not a regular file".
        public let description: String
    }

    /// The whole file at `path`, read as a suite reads its own files: for the integrations and
    /// the `defaults` command, which read schemas, caches and password files.
    ///
    /// It never blocks, and reads only a regular file of at most 32 MiB (64 KiB for a secret):
    /// a FIFO, a device, a socket, a directory, a loop of links or a larger file is refused
    /// unread.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - isSecret: Whether it holds a secret (a password), whose limit is 64 KiB.
    /// - Returns: The bytes; `nil` when there is no file (a link that leads nowhere included).
    /// - Throws: Why the file was not read.
    @_spi(Files)
    public static func _contentsOfRegularFile(
        atPath path: String,
        isSecret: Bool = false
    ) throws(_FileReadError) -> [UInt8]? {
        do {
            return try FileStorage.contents(
                atPath: path,
                directoryIsMissing: false,
                limit: isSecret ? .secret : .settings
            )
        } catch {
            throw _FileReadError(description: error.description)
        }
    }
}
