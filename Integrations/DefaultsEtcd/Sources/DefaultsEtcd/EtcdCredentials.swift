@_spi(Files) import Defaults
import Foundation

/// Who a backend logs in to etcd as, for a cluster with authentication on (`etcdctl auth enable`).
///
/// ```swift
/// let credentials = EtcdCredentials(
///     user: "billing",
///     passwordFile: URL(fileURLWithPath: "/run/credentials/billing.service/etcd-password")
/// )
/// let backend = EtcdBackend(endpoints: [URL(string: "https://10.0.0.5:2379")!],
///                           prefix: "/config/billing/", tls: tls, credentials: credentials)
/// ```
///
/// The password is best read from a file: a systemd credential (`LoadCredential=`), a mounted
/// Kubernetes Secret, a file only the service's user may read. The file is read each time the
/// backend logs in (so a rotated password is taken up), and one line end at its end is not part of
/// the password.
///
/// The backend logs in when it first calls etcd, again before each watch connects, and again when
/// etcd says its token is no longer valid (it expired, or the member restarted). A password etcd
/// refuses is reported once (and each write refused for it, as a refused write); the backend does
/// not offer it again until the file changes, or a minute has passed, so a wrong password never
/// becomes a stream of attempts.
public struct EtcdCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The etcd user (`etcdctl user add`).
    public var user: String
    /// Where the password is.
    public var password: Password

    /// Where a password comes from.
    ///
    /// Its descriptions never show a password.
    public enum Password: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
        CustomReflectable
    {
        /// The contents of this file, without one line end at its end.
        case file(URL)
        /// This text.
        case text(String)

        /// The file's path, or "a password given as text".
        public var description: String {
            switch self {
            case .file(let url): return "the password in \(url.path)"
            case .text: return "a password given as text"
            }
        }

        /// As ``description``.
        public var debugDescription: String { description }

        /// A mirror with no children, so `dump` shows no password.
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
    }

    /// Logs in as `user` with the password in `passwordFile`.
    public init(user: String, passwordFile: URL) {
        self.user = user
        self.password = .file(passwordFile)
    }

    /// Logs in as `user` with `password`.
    public init(user: String, password: String) {
        self.user = user
        self.password = .text(password)
    }

    /// The user, and where the password comes from (never the password).
    public var description: String {
        switch password {
        case .file(let url): return "user \"\(user)\" (password in \(url.path))"
        case .text: return "user \"\(user)\""
        }
    }

    /// The password now.
    ///
    /// The file is read as a suite reads a secret's: without blocking, and only when it is a
    /// regular file of at most 64 KiB (a FIFO, a device, a directory in its place is refused).
    ///
    /// - Throws: A reason for a person when the file cannot be read or is not UTF-8 text; never
    ///   what the file holds.
    func readPassword() throws(EtcdClient.Failure) -> String {
        switch password {
        case .text(let text):
            return text
        case .file(let url):
            let read: [UInt8]?
            do {
                read = try Defaults._contentsOfRegularFile(atPath: url.path, isSecret: true)
            } catch {
                throw EtcdClient.Failure(reason: "the password file \(url.path) cannot be read (\(error.description))")
            }
            guard let bytes = read else {
                throw EtcdClient.Failure(reason: "the password file \(url.path) cannot be read (there is no such file)")
            }
            guard var text = String(validating: bytes, as: UTF8.self) else {
                throw EtcdClient.Failure(reason: "the password file \(url.path) is not UTF-8 text")
            }
            // "\r\n" is one Character.
            if let last = text.last, last == "\n" || last == "\r\n" { text.removeLast() }
            return text
        }
    }
}
