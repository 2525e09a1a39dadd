import Defaults
import Foundation

extension Defaults.Suite {
    /// Creates a suite whose values live in etcd under `prefix`, shared by every process that opens
    /// the same prefix, on any machine.
    ///
    /// Reads come from memory; writes are committed shortly after, coalesced, one etcd transaction
    /// per commit; changes made by others (another instance, `etcdctl put`) reach observers as
    /// `.external` changes. See ``EtcdBackend``.
    ///
    /// ```swift
    /// let settings = Defaults.Suite(
    ///     etcd: [URL(string: "http://127.0.0.1:2379")!],
    ///     prefix: "/config/billing/"
    /// )
    /// ```
    ///
    /// - Parameters:
    ///   - endpoints: The client URLs of the cluster's members.
    ///   - prefix: The prefix of the suite's keys in etcd.
    ///   - cache: Where to keep the last values seen, for a suite opened while etcd is out of reach.
    ///   - tls: For `https` endpoints: the CA to trust and the client certificate to present.
    ///   - credentials: For a cluster with authentication on: the user, and its password file.
    ///   - errorHandler: Where to report problems; `nil` uses ``Defaults/errorHandler``.
    public convenience init(
        etcd endpoints: [URL],
        prefix: String,
        cache: EtcdBackend.CacheLocation = .automatic,
        tls: EtcdTLS? = nil,
        credentials: EtcdCredentials? = nil,
        errorHandler: (@Sendable (Defaults.StorageError) -> Void)? = nil
    ) {
        self.init(
            backend: EtcdBackend(
                endpoints: endpoints,
                prefix: prefix,
                cache: cache,
                tls: tls,
                credentials: credentials
            ),
            errorHandler: errorHandler
        )
    }
}
