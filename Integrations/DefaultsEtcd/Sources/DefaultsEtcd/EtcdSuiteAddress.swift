import Foundation

/// Where a suite in etcd is, written as one URL: `etcd://127.0.0.1:2379/config/billing/`.
///
/// The members' host and port come first, separated by commas when there are several
/// (`etcd://10.0.0.1:2379,10.0.0.2:2379/config/billing/`), then the prefix of the suite's keys,
/// from its first `/`. A prefix without a `/` at its end gets one, so `/config/billing` does not
/// also take in `/config/billing-eu/`. The members are reached over plain HTTP (`http://`), as
/// ``EtcdBackend`` reaches them. The `defaults` command of this package reads such URLs.
public struct EtcdSuiteAddress: Sendable, Equatable, CustomStringConvertible {
    /// The client URLs of the members.
    public var endpoints: [URL]
    /// The prefix of the suite's keys, ending in `/`.
    public var prefix: String

    /// Why a text is not the address of a suite in etcd.
    public struct Invalid: Error, CustomStringConvertible {
        /// What is wrong, for a person.
        public var description: String
    }

    /// Reads `text`, an `etcd://` URL.
    ///
    /// - Throws: ``Invalid`` naming what is wrong: another scheme, no member, a member without
    ///   a port, or no prefix.
    public init(_ text: String) throws(Invalid) {
        guard text.hasPrefix("etcd://") else {
            throw Invalid(description: "an etcd suite starts with etcd://, as etcd://127.0.0.1:2379/config/app/")
        }
        let rest = text.dropFirst("etcd://".count)
        guard let slash = rest.firstIndex(of: "/"), rest[rest.index(after: slash)...].contains(where: { $0 != "/" })
        else {
            throw Invalid(description: "no key prefix after the members, as in etcd://127.0.0.1:2379/config/app/")
        }
        var endpoints: [URL] = []
        for member in rest[..<slash].split(separator: ",", omittingEmptySubsequences: false) {
            guard let colon = member.lastIndex(of: ":"), !member[..<colon].isEmpty,
                let port = Int(member[member.index(after: colon)...]), (1...65535).contains(port),
                let url = URL(string: "http://\(member)")
            else {
                throw Invalid(description: "\"\(member)\" is not a member's host:port, as 127.0.0.1:2379")
            }
            endpoints.append(url)
        }
        var prefix = String(rest[slash...])
        if !prefix.hasSuffix("/") { prefix += "/" }
        self.endpoints = endpoints
        self.prefix = prefix
    }

    /// The address as a URL: `etcd://127.0.0.1:2379/config/billing/`.
    public var description: String {
        let members = endpoints.map { "\($0.host ?? ""):\($0.port ?? 0)" }.joined(separator: ",")
        return "etcd://\(members)\(prefix)"
    }
}
