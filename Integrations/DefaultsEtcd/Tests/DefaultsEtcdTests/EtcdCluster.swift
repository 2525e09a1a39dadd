import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Three etcd members on loopback, one cluster, each in a data folder of its own.
final class EtcdCluster: Sendable {
    let members: [EtcdServer]

    /// The members' client URLs.
    var endpoints: [URL] { members.map(\.clientURL) }

    /// Starts `size` members together (a member serves only once a quorum runs) and returns once
    /// every one serves clients.
    init(size: Int = 3) throws {
        let free = try EtcdServer.freePorts(2 * size)
        let ports = (0..<size).map { (client: free[2 * $0], peer: free[2 * $0 + 1]) }
        let initialCluster = ports.enumerated().map { "m\($0.offset)=http://127.0.0.1:\($0.element.peer)" }
            .joined(separator: ",")
        let token = "cluster-\(UUID())"
        members = try ports.enumerated()
            .map { index, port in
                try EtcdServer(
                    member: "m\(index)",
                    clientPort: port.client,
                    peerPort: port.peer,
                    initialCluster: initialCluster,
                    token: token
                )
            }
        for member in members { try member.waitUntilReady() }
    }

    /// Returns once the members at `endpoints` have a leader: a linearizable read through them is
    /// answered.
    ///
    /// NB: such a read needs the leader, and etcdctl retries a read that found none (a put it does
    /// not retry: it may have been applied) until its command timeout, a minute here, a deadline
    /// that only stops a hang. A read of the status would find nobody leading mid-election.
    func waitForQuorum(of endpoints: [URL]) throws {
        _ = try etcdctl(endpoints: endpoints, ["--command-timeout=60s", "get", "/quorum-probe"])
    }

    /// The member that leads the cluster now, as the members say (`etcdctl endpoint status`).
    ///
    /// NB: on a loaded machine an election may be under way, or start again between two asks: ask
    /// again once a read is answered (an election has ended then), up to 20 times.
    func leader() throws -> EtcdServer {
        var status = ""
        for _ in 0..<20 {
            try waitForQuorum(of: endpoints)
            status = try etcdctl(endpoints: endpoints, ["endpoint", "status", "-w", "json"])
            if let leader = leader(in: status) { return leader }
        }
        throw EtcdServer.ServerError(description: "no member says it leads: \(status)")
    }

    /// The member whose own id is the leader's in `status`, `etcdctl endpoint status`'s JSON.
    private func leader(in status: String) -> EtcdServer? {
        // NB: read as text: member ids are 64-bit, more than a JSON number read as Double keeps.
        for entry in status.split(separator: "{\"Endpoint\":").dropFirst() {
            guard let endpoint = entry.firstMatch(of: /^"([^"]+)"/)?.1,
                let member = entry.firstMatch(of: /"member_id":(\d+)/)?.1,
                let leader = entry.firstMatch(of: /"leader":(\d+)/)?.1,
                member == leader
            else { continue }
            if let found = members.first(where: { $0.clientURL.absoluteString == endpoint }) { return found }
        }
        return nil
    }
}

/// Certificates made with `openssl` for one test, in `directory`: a CA; etcd's certificate for
/// 127.0.0.1, signed by it, and two it cannot serve with (one for another name, one expired); a
/// client certificate with no Common Name, signed by it; and another CA, which signed neither.
struct TestCertificates: Sendable {
    let directory: URL
    /// The certificate a server made with these files serves with: `server` (for 127.0.0.1),
    /// `wrong-name-server` (for etcd.example.com) or `expired-server`.
    var server = "server"
    var authority: URL { directory.appendingPathComponent("ca.pem") }
    var serverCertificate: URL { directory.appendingPathComponent("\(server).pem") }
    var serverKey: URL { directory.appendingPathComponent("\(server)-key.pem") }
    var clientCertificate: URL { directory.appendingPathComponent("client.pem") }
    var clientKey: URL { directory.appendingPathComponent("client-key.pem") }
    var otherAuthority: URL { directory.appendingPathComponent("other-ca.pem") }
    /// A client certificate with a Common Name (`billing`), and its key.
    var namedClientCertificate: URL { directory.appendingPathComponent("named-client.pem") }
    var namedClientKey: URL { directory.appendingPathComponent("named-client-key.pem") }

    init(in directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.path
        try Self.openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Test CA",
            "-keyout", "\(path)/ca-key.pem", "-out", "\(path)/ca.pem",
        ])
        try Self.openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Other CA",
            "-keyout", "\(path)/other-ca-key.pem", "-out", "\(path)/other-ca.pem",
        ])
        // NB: for clients too: etcd's JSON gateway calls the server's gRPC with this certificate
        // (with serverAuth alone, every gateway call failed with "connection closed": measured).
        try Self.issue(
            "server",
            subject: "/CN=etcd",
            extensions: "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth",
            in: path
        )
        try Self.issue(
            "wrong-name-server",
            subject: "/CN=etcd",
            extensions: "subjectAltName=DNS:etcd.example.com\nextendedKeyUsage=serverAuth,clientAuth",
            in: path
        )
        // NB: valid until a day before it was made: expired (`openssl verify` says so).
        try Self.issue(
            "expired-server",
            subject: "/CN=etcd",
            extensions: "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth",
            days: -1,
            in: path
        )
        // NB: no Common Name: etcd's gateway refuses a certificate with one when authentication is on.
        try Self.issue("client", subject: "/O=Defaults tests", extensions: "extendedKeyUsage=clientAuth", in: path)
        try Self.issue("named-client", subject: "/CN=billing", extensions: "extendedKeyUsage=clientAuth", in: path)
    }

    /// A key `<name>-key.pem` and a certificate `<name>.pem` for `subject`, signed by the CA.
    private static func issue(
        _ name: String,
        subject: String,
        extensions: String,
        days: Int = 2,
        in path: String
    ) throws {
        let extensionsFile = "\(path)/\(name).ext"
        try Data(extensions.utf8).write(to: URL(fileURLWithPath: extensionsFile))
        try openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
            "-keyout", "\(path)/\(name)-key.pem", "-out", "\(path)/\(name).csr",
        ])
        try openssl([
            "x509", "-req", "-in", "\(path)/\(name).csr", "-CA", "\(path)/ca.pem", "-CAkey", "\(path)/ca-key.pem",
            "-CAcreateserial", "-days", "\(days)", "-extfile", extensionsFile, "-out", "\(path)/\(name).pem",
        ])
    }

    private static func openssl(_ arguments: [String]) throws {
        try runTool("/usr/bin/openssl", arguments)
    }
}

/// Runs the tool at `path` with `arguments` to its end; throws what it printed if it failed.
func runTool(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let printed = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        let name = URL(fileURLWithPath: path).lastPathComponent
        throw EtcdServer.ServerError(
            description: "\(name) \(arguments.first ?? "") failed: \(String(decoding: printed, as: UTF8.self))"
        )
    }
}
