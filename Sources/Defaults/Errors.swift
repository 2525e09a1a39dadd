import Foundation
import Synchronization

extension Defaults {
    /// A problem the store met while reading or writing its file, reported through the suite's
    /// error handler.
    ///
    /// None of these stop the program or lose data: values stay in memory, a corrupt file is moved
    /// aside rather than overwritten, and a failed write is retried by the next flush.
    public enum StorageError: Error, CustomStringConvertible, Sendable {
        /// The file was not valid JSON (or not a JSON object). It was moved to `movedTo`, and the
        /// suite started from defaults.
        case corruptFile(url: URL, movedTo: URL, reason: String)
        /// The file could not be read, or a corrupt file could not be moved aside. The suite keeps
        /// working in memory and does not write the file, so its bytes stay as they are.
        case unreadableFile(url: URL, reason: String)
        /// The file could not be written (for example, a full disk or an unwritable directory).
        /// The values stay in memory, the previous file is intact, and a later flush retries.
        case writeFailed(url: URL, reason: String)
        /// A value's bridge could not serialize it; the stored value was left as it was.
        case serializationFailed(key: String, valueType: String)
        /// The file stopped parsing while the suite had it open (a bad hand edit, a truncated
        /// write) and stayed so through a few brief retries. It was moved to `movedTo`, intact; the
        /// values in memory were kept (not the defaults) and written back as a new file.
        case corruptFileRewritten(url: URL, movedTo: URL, reason: String)
        /// The file cannot be watched with inotify (`reason` says why), so it is polled about once a
        /// second: changes made by other processes or by hand arrive that much later. Reported once.
        case pollingForChanges(url: URL, reason: String)
        /// An override for this run (`source` names the launch argument or environment variable)
        /// is neither JSON nor text that decodes as `valueType`. Reads of `key` ignore it and
        /// return the stored value or the default. Reported once per key and source.
        case invalidOverride(key: String, source: String, value: String, valueType: String)
        /// The file is not valid JSON (or not a JSON object), and it is not this suite's to move:
        /// a system file, or a file this process may not write. It was left as it is, and read as
        /// if it held nothing: its keys read as the layers beneath it or their defaults.
        case corruptFileLeftInPlace(url: URL, reason: String)
        /// A write was refused because this process may not write the suite's file (`reason` says
        /// why: its permissions, or a read-only file system such as a ConfigMap volume). Nothing
        /// changed, in memory or on disk.
        case readOnlyFile(url: URL, reason: String)
        /// A write to `key` was refused because the system file `lockedBy` locks it. Nothing
        /// changed: a value the user's file holds for it stays there, and is read again once the
        /// lock is lifted.
        case lockedKey(key: String, lockedBy: URL)
        /// A write to `key` was refused because it is a secret key
        /// (``Defaults/Key/init(secret:default:suite:summary:)``): its value comes from the file
        /// `file` (`nil` when the suite has no secrets directory) and is never stored. Nothing changed.
        case secretKey(key: String, file: URL?)
        /// The file `url`, which holds the value of the secret key `key`, exists but cannot be read
        /// (`reason` says why; never what the file holds): it cannot be opened or read, it is not
        /// a regular file (a FIFO, a device, a socket, a directory), it is larger than 64 KiB, or
        /// it is not UTF-8 text; or the secrets directory is no directory (a file, a FIFO, a
        /// device), or `$CREDENTIALS_DIRECTORY` is not an absolute path. Reported once while it
        /// stays so. The key keeps the value it last
        /// read from a good file (its default, when it read none yet) until the file reads again.
        case unreadableSecret(key: String, url: URL, reason: String)
        /// The member `""` of the system file at `url`, where it lists the keys it locks, is not
        /// what it must be (`reason` says why); the file locks nothing until it is mended. Its
        /// values still count.
        case invalidLocks(url: URL, reason: String)
        /// A backend (``Defaults/Backend``; `backend` is its ``Defaults/Backend/name``) could not
        /// load or store values (`reason` says why). The values stay in memory, and a failed commit
        /// is retried later with everything still pending.
        case backendFailed(backend: String, reason: String)
        /// `exclusiveTransaction` was called on a suite whose backend cannot commit only if the
        /// keys read are unchanged (``Defaults/Backend/supportsConditionalCommit``). Nothing ran,
        /// and nothing changed.
        case exclusiveCommitUnsupported(backend: String)
        /// A backend holds a value of `key` that is not a setting's JSON (a person's typo in a
        /// shared store, say); `reason` says what is wrong with it. The key reads its default until
        /// the value is mended; nothing is written over it. The one exception is the record of
        /// migrations (`key` is `""`): a run of migrations replaces one that is no record with
        /// its own, and `reason` quotes what it held.
        case unreadableValue(backend: String, key: String, reason: String)
        /// The suite's file holds a value of `key` (`value`, as JSON) that is not a value of
        /// `expectedType`, the type its published schema gives it: a hand edit that breaks the
        /// schema. The key reads its default, and the value stays in the file until it is mended.
        /// Reported once per key and value.
        case valueDoesNotFitSchema(key: String, expectedType: String, value: String)
        /// A backend refused a write (`backend` is its ``Defaults/Backend/name``; `reason` says
        /// why: the user it logs in as may only read, or its credentials are not accepted). As for
        /// a read-only file, the write is given up, not tried again: the keys read what the backend
        /// holds, and the next ``Defaults/Suite/synchronize()`` throws this.
        case writeRefused(backend: String, reason: String)
        /// A change made elsewhere (another process, a hand edit, another machine) gave `key` a
        /// value (`value`, as JSON) that is not a value of `expectedType`, the type it is read as.
        /// The suite goes on reading the last value that was good, and takes the next good one; the
        /// bad value stays where it was stored until it is mended (a write of the key stores over
        /// it). Reported once per such change.
        case changeDoesNotDecode(key: String, expectedType: String, value: String)
        /// The migration `migration` (its ``Defaults/Migration/id``) could not run: `reason` says
        /// why (a stored value is not of the type it converts from, or its body threw). Nothing
        /// that call of ``Defaults/Suite/migrate(_:dryRun:)`` changed is kept: old values stay
        /// under their old names, and it runs again the next time.
        case migrationFailed(migration: String, reason: String)
        /// ``Defaults/Suite/publishSchema(for:migrations:version:)`` left the schema `backend`
        /// keeps as it was, though it differs from this program's: `reason` says why (another
        /// version of the program published one, and neither its migrations nor its version say
        /// which is newer). Values written by others are checked against the schema kept.
        /// Reported once per publish.
        case schemaNotPublished(backend: String, reason: String)

        /// One line describing the problem.
        public var description: String {
            switch self {
            case .corruptFile(let url, let movedTo, let reason):
                return
                    "Defaults: \(url.path) is corrupt (\(reason)); moved it to \(movedTo.path) and started from defaults"
            case .unreadableFile(let url, let reason):
                return
                    "Defaults: cannot read \(url.path) (\(reason)); keeping values in memory and leaving the file alone"
            case .writeFailed(let url, let reason):
                return
                    "Defaults: cannot write \(url.path) (\(reason)); values stay in memory and the next flush retries"
            case .serializationFailed(let key, let valueType):
                return
                    "Defaults: cannot serialize a value of type \(valueType) for key \"\(key)\"; the stored value is unchanged"
            case .corruptFileRewritten(let url, let movedTo, let reason):
                return
                    "Defaults: \(url.path) stopped parsing (\(reason)); moved it to \(movedTo.path) and wrote the values in memory back"
            case .pollingForChanges(let url, let reason):
                return
                    "Defaults: cannot watch \(url.path) for changes (\(reason)); polling it every second, so outside changes arrive later"
            case .invalidOverride(let key, let source, let value, let valueType):
                return
                    "Defaults: ignoring the \(source) for key \"\(key)\": \"\(value)\" is not a value of type \(valueType)"
            case .corruptFileLeftInPlace(let url, let reason):
                return "Defaults: \(url.path) is corrupt (\(reason)); leaving it as it is and reading it as empty"
            case .readOnlyFile(let url, let reason):
                return "Defaults: not writing \(url.path): \(reason); nothing was changed"
            case .lockedKey(let key, let lockedBy):
                return
                    "Defaults: not writing \"\(key)\": it is locked by \(lockedBy.path); the stored value is unchanged"
            case .secretKey(let key, let file):
                let place = file.map { "from \($0.path)" } ?? "from a secrets directory, and the suite has none"
                return "Defaults: not writing \"\(key)\": it is a secret, read \(place) and never stored"
            case .unreadableSecret(let key, let url, let reason):
                return
                    "Defaults: cannot read the secret \"\(key)\" from \(url.path) (\(reason)); it keeps its last good value, or its default"
            case .invalidLocks(let url, let reason):
                return "Defaults: \(url.path) locks no keys until it is mended: \(reason)"
            case .backendFailed(let backend, let reason):
                return
                    "Defaults: \(backend) failed (\(reason)); values stay in memory, and what is not stored yet is retried"
            case .exclusiveCommitUnsupported(let backend):
                return
                    "Defaults: \(backend) cannot commit only if unchanged, so exclusiveTransaction cannot run on it; nothing changed"
            case .valueDoesNotFitSchema(let key, let expectedType, let value):
                return
                    "Defaults: \"\(key)\" holds \(value), which is not a value of type \(expectedType); it reads its default, and the value stays stored until it is mended"
            case .unreadableValue(let backend, let key, let reason) where key == Defaults.Suite.migrationRecordName:
                // The record of migrations: replaced by a run of migrations, not read as a default.
                return
                    "Defaults: \(backend) held a record of migrations (the member named \"\") that is no record: \(reason)"
            case .unreadableValue(let backend, let key, let reason):
                return
                    "Defaults: \(backend) holds a value of \"\(key)\" that cannot be read (\(reason)); it reads its default until mended"
            case .changeDoesNotDecode(let key, let expectedType, let value):
                return
                    "Defaults: \"\(key)\" was changed elsewhere to \(value), which is not a value of type \(expectedType); it keeps its last value until one of that type comes"
            case .writeRefused(let backend, let reason):
                return
                    "Defaults: \(backend) refused a write (\(reason)); it is given up, and the keys read what is stored"
            case .migrationFailed(let migration, let reason):
                return
                    "Defaults: the migration \"\(migration)\" failed (\(reason)); nothing was changed, and it runs again next time"
            case .schemaNotPublished(let backend, let reason):
                return "Defaults: the schema \(backend) keeps was left as it was: \(reason)"
            }
        }
    }

    /// Why a suite name was rejected by ``Defaults/Suite/init(name:errorHandler:)``.
    public struct SuiteNameError: Error, CustomStringConvertible, Sendable, Equatable {
        /// The rejected name.
        public let name: String
        /// What is wrong with it.
        public let reason: String

        /// One line naming the suite and the rule it breaks.
        public var description: String { "Invalid suite name \"\(name)\": \(reason)" }
    }

    /// Holds the handler; a bare closure in a Mutex would be re-wrapped on every read.
    private final class ErrorHandlerBox: Sendable {
        let handler: @Sendable (StorageError) -> Void
        init(_ handler: @escaping @Sendable (StorageError) -> Void) { self.handler = handler }
    }

    private static let globalErrorHandler = Lock(
        ErrorHandlerBox { error in
            FileHandle.standardError.write(Data((error.description + "\n").utf8))
        }
    )

    /// The handler that suites created without one of their own report problems to.
    ///
    /// By default it writes one line to standard error. It is called outside every lock: on the
    /// thread that called ``Suite/synchronize()`` or wrote the value, or on a global dispatch queue
    /// for problems found by the background flush and for a corrupt file of the standard suite. A
    /// handler may use the store, call `synchronize()`, or exit.
    public static var errorHandler: @Sendable (StorageError) -> Void {
        get { globalErrorHandler.withLock { $0 }.handler }
        set {
            let box = ErrorHandlerBox(newValue)
            globalErrorHandler.withLock { $0 = box }
        }
    }
}

extension Defaults.StorageError {
    /// Whether a commit that failed with this was refused (given up), not failed (tried again).
    var isRefusal: Bool {
        switch self {
        case .readOnlyFile, .writeRefused: return true
        default: return false
        }
    }
}
