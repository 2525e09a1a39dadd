import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The secret keys of a suite, and what their files hold: a layer above every other, which is read
/// from files and never stored.
///
/// A secret key's value is the text of the file named after the key in the suite's secrets
/// directory (`$CREDENTIALS_DIRECTORY`, where systemd puts a service's credentials, or the
/// directory given to ``Defaults/Suite/readSecrets(from:)``), or the key's default when there is
/// no such file. Nothing else sets it: a value in the suite's file or backend, a system file, a
/// launch argument or an environment variable (both of which other processes can read) is passed
/// over, and a write is refused. Held in the store's state, as part of ``SystemLayers``.
struct Secrets: Sendable {
    /// The directory given to ``Defaults/Suite/readSecrets(from:)``; `nil` reads from
    /// `$CREDENTIALS_DIRECTORY` (see ``effectiveDirectory``).
    var directory: URL?
    /// How many readings of the files have started: each takes the next number, and a reading
    /// that ends after a later one does not replace what the later one found.
    var readsStarted: UInt64 = 0
    /// The number of the reading each secret's value came from.
    private var readAt: [String: UInt64] = [:]
    /// Every secret key's name, with what its file holds (`nil`: no file, the key's default).
    private(set) var values: [String: JSONValue?] = [:]
    /// What follows the files on disk; made with the first secret key.
    var files: SecretFiles?

    /// No secret keys, read from `directory`.
    init(directory: URL?) {
        self.directory = directory
    }

    /// Whether `name` is a secret key.
    func contains(_ name: String) -> Bool { values.index(forKey: name) != nil }

    /// The directory the files are read from now: the one given, or `$CREDENTIALS_DIRECTORY`;
    /// `nil` when there is neither.
    var effectiveDirectory: URL? {
        directory ?? Self.credentialsDirectory(environment: ProcessInfo.processInfo.environment)
    }

    /// Where the secret `name` is read from; `nil` when there is no directory.
    func fileURL(of name: String) -> URL? {
        effectiveDirectory?.appendingPathComponent(name, isDirectory: false)
    }

    /// Starts a reading of the files: its number, for ``take(_:reading:)``.
    mutating func startReading() -> UInt64 {
        readsStarted += 1
        return readsStarted
    }

    /// Why each secret whose file cannot be read cannot, as last reported.
    private var problems: [String: String] = [:]

    /// Makes `name` a secret key holding `value`.
    mutating func set(_ value: JSONValue?, for name: String) {
        values[name] = .some(value)
    }

    /// Takes in what the reading numbered `reading` found: each secret holds what its file holds
    /// (`nil`, its default, when there is no file); a secret a later reading found already is
    /// left as that one found it.
    ///
    /// A file that cannot be read (of a kind not read, too large, not UTF-8, unreadable) leaves
    /// its secret as it was, as a bad value from elsewhere leaves a key at its last good value;
    /// a secret declared just now holds its default then.
    ///
    /// - Returns: The problems to report: those not reported already for the same file.
    mutating func take(
        _ found: [String: Result<JSONValue?, Defaults.StorageError>],
        reading: UInt64
    ) -> [Defaults.StorageError] {
        var new: [Defaults.StorageError] = []
        for (name, result) in found where reading > readAt[name, default: 0] {
            readAt[name] = reading
            switch result {
            case .success(let value):
                set(value, for: name)
                problems[name] = nil
            case .failure(let problem):
                if !contains(name) { set(nil, for: name) }
                if problems[name] != problem.description { new.append(problem) }
                problems[name] = problem.description
            }
        }
        return new
    }

    /// The directory systemd gives a service its credentials in: `$CREDENTIALS_DIRECTORY`, when
    /// it is an absolute path.
    static func credentialsDirectory(environment: [String: String]) -> URL? {
        guard let path = environment["CREDENTIALS_DIRECTORY"], path.hasPrefix("/") else { return nil }
        return URL(fileURLWithPath: path, isDirectory: true)
    }

    /// Whether `name` can name a file of its own in a directory, as a secret key's name must.
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0")
    }

    /// The value of `$CREDENTIALS_DIRECTORY` when it is set but not an absolute path, so no secret
    /// is read from it.
    static func relativeCredentialsDirectory(environment: [String: String]) -> String? {
        guard let path = environment["CREDENTIALS_DIRECTORY"], !path.isEmpty, !path.hasPrefix("/") else { return nil }
        return path
    }

    /// Why the secrets directory `directory` holds none: it is there, and is no directory.
    ///
    /// A file, a FIFO, a device: looked at without opening it. `nil` when it is a directory or is
    /// not there at all.
    static func notADirectory(_ directory: URL) -> String? {
        var info = stat()
        guard stat(directory.path, &info) == 0, info.st_mode & S_IFMT != S_IFDIR else { return nil }
        let kind =
            FileKind.refusal(of: info.st_mode)?.replacingOccurrences(of: "a regular file", with: "a directory")
            ?? "it is a regular file, not a directory"
        return "the secrets directory \(directory.path) holds no files: \(kind)"
    }

    /// Reads the secret `name` from `directory`: the file's text, less one line ending at its end
    /// (as `echo` and most editors leave one); `nil` when there is no directory or no such file
    /// (a link that leads nowhere included).
    ///
    /// It never blocks, and reads only a regular file of at most 64 KiB (``FileSizeLimit/secret``):
    /// see ``FileStorage/contents(atPath:directoryIsMissing:limit:)``.
    ///
    /// - Throws: ``Defaults/StorageError/unreadableSecret(key:url:reason:)`` when the file exists
    ///   and cannot be read, is not a regular file, is too large, or is not UTF-8 text; and when
    ///   the directory is no directory (a file, a FIFO, a device), or `$CREDENTIALS_DIRECTORY`
    ///   names none but is not an absolute path. The error never holds the file's contents.
    static func read(_ name: String, in directory: URL?) throws(Defaults.StorageError) -> JSONValue? {
        guard let directory else {
            let environment = ProcessInfo.processInfo.environment
            guard let relative = relativeCredentialsDirectory(environment: environment) else { return nil }
            throw .unreadableSecret(
                key: name,
                url: URL(fileURLWithPath: name, relativeTo: URL(fileURLWithPath: relative, isDirectory: true)),
                reason: "$CREDENTIALS_DIRECTORY is \"\(relative)\", not an absolute path, so no secret is read from it"
            )
        }
        let url = directory.appendingPathComponent(name, isDirectory: false)
        let read: [UInt8]?
        do {
            read = try FileStorage.contents(atPath: url.path, directoryIsMissing: false, limit: .secret)
        } catch {
            throw .unreadableSecret(key: name, url: url, reason: "\(error)")
        }
        guard let bytes = read else {
            // No file: none there, or no directory to hold one.
            if let reason = notADirectory(directory) { throw .unreadableSecret(key: name, url: url, reason: reason) }
            return nil
        }
        guard var text = String(validating: bytes, as: UTF8.self) else {
            throw .unreadableSecret(key: name, url: url, reason: "the file is not UTF-8 text")
        }
        if text.hasSuffix("\r\n") {
            text.removeLast(1)  // "\r\n" is one Character
        } else if text.hasSuffix("\n") {
            text.removeLast()
        }
        return .string(text)
    }
}
