import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A real etcd server (Debian's `etcd-server`) on loopback, in a temporary data folder, for one test.
final class EtcdServer: Sendable {
    let directory: URL
    let clientURL: URL
    private let peerURL: String
    private let arguments: [String]
    /// The server process, and what is signalled once its standard error has ended.
    private let running = Mutex<(process: Process, ended: DispatchSemaphore)?>(nil)

    /// The certificates of a server that serves clients over TLS.
    let certificates: TestCertificates?

    /// Starts `etcd` on free loopback ports and returns once it serves clients; with
    /// `certificates`, over TLS only, asking every client for a certificate its CA signed.
    init(tls certificates: TestCertificates? = nil, arguments extra: [String] = []) throws {
        directory = try Self.makeDirectory()
        self.certificates = certificates
        let ports = try Self.freePorts(2)
        let (clientPort, peerPort) = (ports[0], ports[1])
        clientURL = URL(string: "\(certificates == nil ? "http" : "https")://127.0.0.1:\(clientPort)")!
        let peer = "http://127.0.0.1:\(peerPort)"
        peerURL = peer
        arguments =
            Self.arguments(
                name: "test",
                directory: directory,
                client: clientURL,
                peer: peer,
                initialCluster: "test=\(peer)"
            )
            + (certificates.map { files in
                [
                    "--cert-file", files.serverCertificate.path, "--key-file", files.serverKey.path,
                    "--trusted-ca-file", files.authority.path, "--client-cert-auth",
                ]
            } ?? []) + extra
        do {
            try start()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Launches a member `name` of a cluster whose members' peer URLs `initialCluster` lists, and
    /// returns at once: a member serves only once a quorum has started (``waitUntilReady()``).
    init(member name: String, clientPort: Int, peerPort: Int, initialCluster: String, token: String) throws {
        directory = try Self.makeDirectory()
        certificates = nil
        peerURL = "http://127.0.0.1:\(peerPort)"
        clientURL = URL(string: "http://127.0.0.1:\(clientPort)")!
        arguments =
            Self.arguments(
                name: name,
                directory: directory,
                client: clientURL,
                peer: "http://127.0.0.1:\(peerPort)",
                initialCluster: initialCluster
            ) + ["--initial-cluster-token", token]
        try launch()
    }

    private static func makeDirectory() throws -> URL {
        // NB: in memory where there is a tmpfs: etcd syncs every commit to disk, and the tests commit a lot.
        let base =
            FileManager.default.fileExists(atPath: "/dev/shm")
            ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
        let directory = base.appendingPathComponent("DefaultsEtcdTests-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    private static func arguments(
        name: String,
        directory: URL,
        client: URL,
        peer: String,
        initialCluster: String
    ) -> [String] {
        [
            "--name", name, "--data-dir", directory.appendingPathComponent("data").path,
            "--listen-client-urls", client.absoluteString, "--advertise-client-urls", client.absoluteString,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", initialCluster,
        ]
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts the server again (after ``stop()``), on the same ports and data, and returns once it
    /// serves clients.
    func start() throws {
        try launch()
        try waitUntilReady()
    }

    /// What ``waitUntilReady()`` waits on: signalled at the "ready" line, or at the end of the log.
    private let readiness = Mutex<(ready: DispatchSemaphore, log: LogTail)?>(nil)

    /// Waits for the server's own "ready to serve client requests" line (not a guess at how long
    /// it takes); stops it and throws if it has not come within 60 s.
    func waitUntilReady() throws {
        guard let (ready, log) = readiness.withLock({ $0 }) else { return }
        let served = ready.wait(timeout: .now() + 60) == .success && log.isReady
        guard served else {
            stop()
            throw ServerError(description: "etcd did not start: \(log.text.suffix(2_000))")
        }
    }

    /// Replaces the data of a server started with ``init()`` by the snapshot at `snapshot`
    /// (`etcdctl snapshot save`), as an operator restoring a backup does, and starts it again: a
    /// new cluster, whose revision is the snapshot's, on the same ports.
    func restore(from snapshot: URL) throws {
        stop()
        let data = directory.appendingPathComponent("data")
        try FileManager.default.removeItem(at: data)
        try runTool(
            "/usr/bin/etcdctl",
            [
                "snapshot", "restore", snapshot.path, "--name", "test", "--data-dir", data.path,
                "--initial-cluster", "test=\(peerURL)", "--initial-advertise-peer-urls", peerURL,
                "--initial-cluster-token", "restored-\(UUID())",
            ],
            environment: ["ETCDCTL_API": "3"]
        )
        try start()
    }

    /// Sends SIGKILL: the member dies at once, as a crashed machine's would.
    func kill() {
        send(SIGKILL)
    }

    /// Sends SIGSTOP: the member stalls, as one in a long pause or behind a stuck disk does.
    ///
    /// The kernel still takes connections and requests; nothing answers them.
    func stall() {
        send(SIGSTOP)
    }

    /// Sends SIGCONT: a stalled member goes on.
    func resume() {
        send(SIGCONT)
    }

    private func send(_ signal: Int32) {
        let process = running.withLock { $0?.process }
        if let process, process.isRunning { _ = Glibc.kill(process.processIdentifier, signal) }
    }

    /// Starts the process, and returns at once.
    private func launch() throws {
        let process = Process()
        process.executableURL = try Self.etcdExecutable()
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let ready = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let log = LogTail()
        // NB: read to the end, long after "ready": a pipe nobody drains would stop etcd's logging.
        readToTheEnd(errors.fileHandleForReading) { data in
            guard let data else {
                ready.signal()
                ended.signal()
                return
            }
            if log.take(data) { ready.signal() }
        }
        try process.run()
        running.withLock { $0 = (process, ended) }
        readiness.withLock { $0 = (ready, log) }
    }

    /// What the server logged until it was ready.
    private final class LogTail: Sendable {
        private let state = Mutex<(text: String, isReady: Bool)>(("", false))

        var text: String { state.withLock { $0.text } }
        var isReady: Bool { state.withLock { $0.isReady } }

        /// Takes in a piece of the log; true when it made the server ready.
        func take(_ data: Data) -> Bool {
            state.withLock { log in
                // NB: the log is kept only until the server is ready; after that it is drained.
                guard !log.isReady else { return false }
                log.text += String(decoding: data, as: UTF8.self)
                log.isReady = log.text.contains("ready to serve client requests")
                return log.isReady
            }
        }
    }

    /// Stops the server (SIGTERM) and waits for it to exit.
    func stop() {
        guard
            let (process, ended) = running.withLock({ state in
                defer { state = nil }
                return state
            })
        else { return }
        if process.isRunning {
            process.terminate()
            // NB: a stalled member would hold the signal until it went on.
            _ = Glibc.kill(process.processIdentifier, SIGCONT)
        }
        process.waitUntilExit()
        ended.wait()
    }

    struct ServerError: Error, CustomStringConvertible {
        let description: String
    }

    private static func etcdExecutable() throws -> URL {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("etcd")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw ServerError(description: "no etcd on the PATH: install Debian's etcd-server")
    }

    /// `count` distinct loopback ports nothing listens on now.
    ///
    /// NB: bound all at once and only then let go, so one call never names a port twice (two calls
    /// in a row may: the kernel hands a port freed a moment ago out again).
    static func freePorts(_ count: Int) throws -> [Int] {
        let reserved = try (0..<count).map { _ in try ReservedPort() }
        return reserved.map(\.port)
    }
}

/// A loopback port bound, never listened on, and held until released: a connection to it is
/// refused at once, and no server another test starts meanwhile can take it.
final class ReservedPort: Sendable {
    private let descriptor: Int32
    let port: Int

    init() throws {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw EtcdServer.ServerError(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(socketDescriptor, socketAddress, length) == 0
                    && getsockname(socketDescriptor, socketAddress, &length) == 0
            }
        }
        guard bound else {
            close(socketDescriptor)
            throw EtcdServer.ServerError(description: "no free port")
        }
        descriptor = socketDescriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }

}
