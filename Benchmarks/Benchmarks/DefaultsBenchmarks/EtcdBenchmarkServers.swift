import AsyncHTTPClient
import Benchmark
import Defaults
import DefaultsEtcd
import DefaultsObservation
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Three etcd members for the stall benchmark, started the first time it runs, stopped at exit.
final class BenchEtcdCluster: Sendable {
    struct Member: Sendable {
        let endpoint: URL
        let pid: pid_t
    }

    let members: [Member]
    var endpoints: [URL] { members.map(\.endpoint) }

    nonisolated(unsafe) private static var pids: [pid_t] = []
    nonisolated(unsafe) private static var directories: [String] = []

    static let shared = BenchEtcdCluster()

    private init() {
        let ports = (0..<3).map { _ in (client: BenchEtcd.freePort(), peer: BenchEtcd.freePort()) }
        let initial = ports.enumerated().map { "s\($0.offset)=http://127.0.0.1:\($0.element.peer)" }
            .joined(separator: ",")
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : Scratch.root
        var started: [(Member, DispatchSemaphore)] = []
        for (index, port) in ports.enumerated() {
            var template = Array((base + "/defaults-bench-etcd-XXXXXX").utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            precondition(made != nil, "cannot make etcd's data folder")
            let directory = String(cString: made!)
            let client = "http://127.0.0.1:\(port.client)"
            let peer = "http://127.0.0.1:\(port.peer)"
            let (pid, ready) = BenchEtcd.launch([
                "--name", "s\(index)", "--data-dir", directory + "/data", "--listen-client-urls", client,
                "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", initial, "--initial-cluster-token", "bench-stall",
            ])
            Self.pids.append(pid)
            Self.directories.append(directory)
            started.append((Member(endpoint: URL(string: client)!, pid: pid), ready))
        }
        atexit {
            for pid in BenchEtcdCluster.pids {
                kill(pid, SIGCONT)
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            for directory in BenchEtcdCluster.directories { try? FileManager.default.removeItem(atPath: directory) }
        }
        for (_, ready) in started {
            precondition(ready.wait(timeout: .now() + 60) == .success, "an etcd member did not start")
        }
        members = started.map(\.0)
    }

    /// A member that does not lead now (`/v3/maintenance/status`), so stopping it needs no election.
    func follower() -> Member {
        struct Status: Decodable {
            struct Header: Decodable { var member_id: String? }
            var header: Header
            var leader: String?
        }
        for _ in 0..<100 {
            for member in members {
                var request = try! HTTPClient.Request(
                    url: member.endpoint.absoluteString + "/v3/maintenance/status",
                    method: .POST
                )
                request.body = .string("{}")
                guard let response = try? HTTPClient.shared.execute(request: request).wait(),
                    let body = response.body,
                    let status = try? JSONDecoder().decode(Status.self, from: Data(body.readableBytesView)),
                    let leader = status.leader, leader != "0"
                else { continue }
                if status.header.member_id != leader { return member }
            }
            usleep(100_000)
        }
        preconditionFailure("the cluster has no leader")
    }
}

/// One etcd member that serves clients over TLS, asking for client certificates, and over plain HTTP
/// on a second URL (for the puts); certificates made with `openssl` at the start; stopped at exit.
final class BenchEtcdTLS: Sendable {
    let http: URL
    let https: URL
    let tls: EtcdTLS

    static let shared = BenchEtcdTLS()

    nonisolated(unsafe) private static var pid: pid_t = 0
    nonisolated(unsafe) private static var directory = ""

    private init() {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : Scratch.root
        var template = Array((base + "/defaults-bench-etcd-tls-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "cannot make etcd's data folder")
        let path = String(cString: made!)
        Self.directory = path
        func openssl(_ arguments: [String]) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try! process.run()
            process.waitUntilExit()
            precondition(process.terminationStatus == 0, "openssl \(arguments[0]) failed")
        }
        openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Bench CA", "-keyout",
            "\(path)/ca-key.pem", "-out", "\(path)/ca.pem",
        ])
        for (name, subject, usage) in [
            ("server", "/CN=etcd", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth"),
            ("client", "/O=bench", "extendedKeyUsage=clientAuth"),
        ] {
            try! Data(usage.utf8).write(to: URL(fileURLWithPath: "\(path)/\(name).ext"))
            openssl([
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", "\(path)/\(name)-key.pem", "-out",
                "\(path)/\(name).csr",
            ])
            openssl([
                "x509", "-req", "-in", "\(path)/\(name).csr", "-CA", "\(path)/ca.pem", "-CAkey", "\(path)/ca-key.pem",
                "-CAcreateserial", "-days", "2", "-extfile", "\(path)/\(name).ext", "-out", "\(path)/\(name).pem",
            ])
        }
        let http = "http://127.0.0.1:\(BenchEtcd.freePort())"
        let https = "https://127.0.0.1:\(BenchEtcd.freePort())"
        let peer = "http://127.0.0.1:\(BenchEtcd.freePort())"
        let (pid, ready) = BenchEtcd.launch([
            "--name", "tls", "--data-dir", path + "/data", "--listen-client-urls", "\(http),\(https)",
            "--advertise-client-urls", "\(http),\(https)", "--listen-peer-urls", peer, "--initial-advertise-peer-urls",
            peer, "--initial-cluster", "tls=\(peer)", "--cert-file", "\(path)/server.pem", "--key-file",
            "\(path)/server-key.pem", "--trusted-ca-file", "\(path)/ca.pem", "--client-cert-auth",
        ])
        Self.pid = pid
        atexit {
            kill(BenchEtcdTLS.pid, SIGKILL)
            var status: Int32 = 0
            waitpid(BenchEtcdTLS.pid, &status, 0)
            try? FileManager.default.removeItem(atPath: BenchEtcdTLS.directory)
        }
        precondition(ready.wait(timeout: .now() + 60) == .success, "etcd over TLS did not start")
        self.http = URL(string: http)!
        self.https = URL(string: https)!
        tls = EtcdTLS(
            certificateAuthority: URL(fileURLWithPath: "\(path)/ca.pem"),
            clientCertificate: URL(fileURLWithPath: "\(path)/client.pem"),
            clientKey: URL(fileURLWithPath: "\(path)/client-key.pem")
        )
    }
}
