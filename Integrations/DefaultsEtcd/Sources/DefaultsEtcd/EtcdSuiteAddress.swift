import Foundation

/// Where a suite in etcd is, written as one URL: `etcd://127.0.0.1:2379/config/billing/`.
///
/// The members' host and port come first, separated by commas when there are several
/// (`etcd://10.0.0.1:2379,10.0.0.2:2379/config/billing/`), then the prefix of the suite's keys,
/// from its first `/`. A prefix without a `/` at its end gets one, so `/config/billing` does not
/// also take in `/config/billing-eu/`. With `etcd://` the members are reached over plain HTTP;
/// with `etcds://`, over TLS, and the query may name the PEM files etcdctl's flags of the same
/// names take: `etcds://10.0.0.1:2379/config/billing/?cacert=/etc/ca.pem&cert=/etc/c.pem&key=/etc/k.pem`.
/// With either scheme, `user=` and `password-file=` name the etcd user to log in as and the file
/// holding its password (never the password itself, which a URL would show to anyone who lists
/// processes): `etcd://10.0.0.1:2379/config/billing/?user=billing&password-file=/run/credentials/billing.service/etcd`.
/// A service systemd gives credentials to (`LoadCredential=etcd-password:/etc/billing/etcd-password`)
/// names them instead, as files in `$CREDENTIALS_DIRECTORY`: `password-credential=etcd-password`,
/// and `key-credential=` for the TLS client key (`etcds://…/?cert=/etc/billing/client.pem&key-credential=etcd-client-key`).
/// The `defaults` command of this package reads such URLs.
public struct EtcdSuiteAddress: Sendable, Equatable, CustomStringConvertible {
    /// The client URLs of the members.
    public var endpoints: [URL]
    /// The prefix of the suite's keys, ending in `/`.
    public var prefix: String
    /// For `etcds://`: the files the query names (`cacert`, `cert`, `key`); `nil` for `etcd://`.
    public var tls: EtcdTLS?
    /// The etcd user the query names (`user`); `nil` for none.
    public var user: String?
    /// The file holding the password of ``user`` (`password-file`).
    public var passwordFile: URL?

    /// The user and its password file, when the address names both.
    public var credentials: EtcdCredentials? {
        guard let user, let passwordFile else { return nil }
        return EtcdCredentials(user: user, passwordFile: passwordFile)
    }

    /// Why a text is not the address of a suite in etcd.
    public struct Invalid: Error, CustomStringConvertible {
        /// What is wrong, for a person.
        public var description: String
    }

    /// Reads `text`, an `etcd://` URL.
    ///
    /// - Throws: ``Invalid`` naming what is wrong: another scheme, no member, a member without
    ///   a port, or no prefix; a credential named while `$CREDENTIALS_DIRECTORY` is not set.
    public init(_ text: String) throws(Invalid) {
        try self.init(text, environment: ProcessInfo.processInfo.environment)
    }

    /// Reads `text` with `environment`'s `$CREDENTIALS_DIRECTORY`.
    init(_ text: String, environment: [String: String]) throws(Invalid) {
        let credentials = environment["CREDENTIALS_DIRECTORY"]
            .flatMap { path in
                path.hasPrefix("/") ? URL(fileURLWithPath: path, isDirectory: true) : nil
            }
        let secure = text.hasPrefix("etcds://")
        guard secure || text.hasPrefix("etcd://") else {
            throw Invalid(
                description:
                    "an etcd suite starts with etcd:// (or etcds:// for TLS), as etcd://127.0.0.1:2379/config/app/"
            )
        }
        var rest = text.dropFirst(secure ? "etcds://".count : "etcd://".count)
        var tls: EtcdTLS? = secure ? EtcdTLS() : nil
        var user: String?
        var passwordFile: URL?
        if let question = rest.firstIndex(of: "?") {
            (tls, user, passwordFile) = try Self.options(
                in: rest[rest.index(after: question)...],
                secure: secure,
                credentials: credentials
            )
            rest = rest[..<question]
        }
        guard let slash = rest.firstIndex(of: "/"), rest[rest.index(after: slash)...].contains(where: { $0 != "/" })
        else {
            throw Invalid(description: "no key prefix after the members, as in etcd://127.0.0.1:2379/config/app/")
        }
        var endpoints: [URL] = []
        for member in rest[..<slash].split(separator: ",", omittingEmptySubsequences: false) {
            guard let colon = member.lastIndex(of: ":"), !member[..<colon].isEmpty,
                let port = Int(member[member.index(after: colon)...]), (1...65535).contains(port),
                let url = URL(string: "\(secure ? "https" : "http")://\(member)")
            else {
                throw Invalid(description: "\"\(member)\" is not a member's host:port, as 127.0.0.1:2379")
            }
            endpoints.append(url)
        }
        var prefix = String(rest[slash...])
        if !prefix.hasSuffix("/") { prefix += "/" }
        self.endpoints = endpoints
        self.prefix = prefix
        self.tls = tls
        self.user = user
        self.passwordFile = passwordFile
    }

    /// What a query names: the TLS files (`cacert`, `cert` and `key`, as etcdctl's flags), and
    /// the user (`user`, `password-file`); `key-credential` and `password-credential` name files
    /// in `credentials`.
    private static func options(
        in query: Substring,
        secure: Bool,
        credentials: URL?
    ) throws(Invalid) -> (EtcdTLS?, user: String?, passwordFile: URL?) {
        var tls = EtcdTLS()
        var user: String?
        var passwordFile: URL?
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = String(parts[1]).removingPercentEncoding, !value.isEmpty else {
                // The name only: the value may be a password given where none belongs.
                throw Invalid(description: "\"\(parts[0])=…\" is not name=value, as cacert=/etc/etcd/ca.pem")
            }
            var file = URL(fileURLWithPath: value)
            if parts[0].hasSuffix("-credential") {
                guard let credentials else {
                    throw Invalid(
                        description:
                            "\(parts[0])= names a systemd credential, but $CREDENTIALS_DIRECTORY is not set to an absolute path (LoadCredential= in the service's unit sets it); name the file itself with \(parts[0] == "key-credential" ? "key=" : "password-file=")"
                    )
                }
                guard !value.contains("/"), value != ".", value != ".." else {
                    throw Invalid(description: "\"\(value)\" is not a credential's name, as etcd-password")
                }
                file = credentials.appendingPathComponent(value, isDirectory: false)
            }
            if ["cacert", "cert", "key", "key-credential"].contains(parts[0]), !secure {
                throw Invalid(
                    description: "certificates (?\(parts[0])=…) go with etcds://, the address of members over TLS"
                )
            }
            switch parts[0] {
            case "cacert": tls.certificateAuthority = file
            case "cert": tls.clientCertificate = file
            case "key", "key-credential": tls.clientKey = file
            case "user": user = value
            case "password-file", "password-credential": passwordFile = file
            case "password":
                throw Invalid(
                    description:
                        "a password is never part of an address (anyone listing processes would see it): name its file with password-file="
                )
            default:
                throw Invalid(
                    description:
                        "\"\(parts[0])\" is none of cacert, cert, key, key-credential, user, password-file and password-credential"
                )
            }
        }
        guard (tls.clientCertificate == nil) == (tls.clientKey == nil) else {
            throw Invalid(description: "a client certificate goes with its key: give both cert= and key=")
        }
        guard passwordFile == nil || user != nil else {
            throw Invalid(description: "a password file goes with a user: give user= too")
        }
        return (secure ? tls : nil, user, passwordFile)
    }

    /// The address as a URL: `etcd://127.0.0.1:2379/config/billing/`.
    public var description: String {
        let members = endpoints.map { "\($0.host ?? ""):\($0.port ?? 0)" }.joined(separator: ",")
        let options = [
            ("cacert", tls?.certificateAuthority?.path), ("cert", tls?.clientCertificate?.path),
            ("key", tls?.clientKey?.path), ("user", user), ("password-file", passwordFile?.path),
        ]
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+%")
        let query =
            options.compactMap { name, value in
                value.map { "\(name)=\($0.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0)" }
            }
            .joined(separator: "&")
        return "\(tls == nil ? "etcd" : "etcds")://\(members)\(prefix)\(query.isEmpty ? "" : "?" + query)"
    }
}
