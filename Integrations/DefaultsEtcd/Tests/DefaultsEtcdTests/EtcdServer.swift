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

/// Runs `etcdctl` against `server` and returns what it printed.
func etcdctl(_ server: EtcdServer, _ arguments: [String]) throws -> String {
    guard let files = server.certificates else { return try etcdctl(endpoints: [server.clientURL], arguments) }
    let tls = [
        "--cacert", files.authority.path, "--cert", files.clientCertificate.path, "--key", files.clientKey.path,
    ]
    return try etcdctl(endpoints: [server.clientURL], tls + arguments)
}

/// Runs `etcdctl` against `endpoints` and returns what it printed; `input` is its standard input.
func etcdctl(endpoints: [URL], _ arguments: [String], input: String? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/etcdctl")
    process.arguments = ["--endpoints", endpoints.map(\.absoluteString).joined(separator: ",")] + arguments
    process.environment = ["ETCDCTL_API": "3"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    let standardInput = Pipe()
    process.standardInput = standardInput
    try process.run()
    // NB: small enough for the pipe's buffer; closed so etcdctl sees the end.
    standardInput.fileHandleForWriting.write(Data((input ?? "").utf8))
    try standardInput.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else {
        throw EtcdServer.ServerError(description: "etcdctl \(arguments) failed: \(text)")
    }
    return text
}

/// Runs `count` helpers at once, the one numbered `index` with `arguments(index)`; returns what each
/// printed and how it ended.
func runHelpers(
    _ server: EtcdServer,
    count: Int,
    arguments: @escaping @Sendable (Int) -> [String]
) async throws -> [(status: Int32, output: String)] {
    try await withThrowingTaskGroup(of: (status: Int32, output: String).self) { group in
        for index in 0..<count {
            group.addTask { try await runHelper(server, arguments(index)) }
        }
        return try await group.reduce(into: []) { $0.append($1) }
    }
}

/// Runs the `etcd-test-helper` built beside the test binary with `arguments`, its cache of values
/// in `server`'s folder; returns its output.
func runHelper(_ server: EtcdServer, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    let cacheHome = server.directory.appendingPathComponent("cache").path
    return try await withCheckedThrowingContinuation { continuation in
        // NB: on a thread of its own: waiting for the process must not hold a thread of the pool.
        Thread.detachNewThread {
            do {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
                    .deletingLastPathComponent().appendingPathComponent("etcd-test-helper")
                process.arguments = arguments
                process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CACHE_HOME": cacheHome]) {
                    $1
                }
                let output = Pipe()
                process.standardOutput = output
                process.standardError = output
                try process.run()
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// The product `name` built beside the test binary.
func builtProduct(_ name: String) -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name)
}

/// Runs the product `name` with `arguments` to its end; returns its status and output.
func runProduct(
    _ name: String,
    _ arguments: [String],
    environment: [String: String] = [:]
) async throws -> (status: Int32, output: String) {
    let running = try RunningProduct(name, arguments, environment: environment)
    let status = await running.exitStatus()
    return (status, running.rest())
}

/// A product of this package running as another process, its output read line by line.
final class RunningProduct: Sendable {
    private let process: Process
    private let lines = Mutex<(lines: [String], partial: String, ended: Bool)>(([], "", false))
    private let arrived = NSCondition()

    init(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = builtProduct(name)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        readToTheEnd(output.fileHandleForReading) { [self] data in
            arrived.lock()
            lines.withLock { state in
                guard let data else {
                    if !state.partial.isEmpty { state.lines.append(state.partial) }
                    state.partial = ""
                    state.ended = true
                    return
                }
                state.partial += String(decoding: data, as: UTF8.self)
                while let newline = state.partial.firstIndex(of: "\n") {
                    state.lines.append(String(state.partial[..<newline]))
                    state.partial.removeSubrange(...newline)
                }
            }
            arrived.broadcast()
            arrived.unlock()
        }
        try process.run()
    }

    deinit {
        stop()
    }

    /// Ends the process (SIGTERM) if it still runs, and waits for it.
    ///
    /// NB: a test must call it for a process that would run on: the thread reading its output holds
    /// this object until the output ends, so the deinit does not come first.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Sends `signal` to the process: SIGSTOP holds it up as a stalled machine would, SIGCONT lets
    /// it go on.
    func send(_ signal: Int32) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
    }

    /// The next line it prints, waited for off the pool for up to 120 s (a deadline that only
    /// stops a hang); `nil` if none came.
    func nextLine() async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date() + 120
                arrived.lock()
                var line: String?
                while true {
                    let (next, ended) = lines.withLock { state -> (String?, Bool) in
                        state.lines.isEmpty ? (nil, state.ended) : (state.lines.removeFirst(), state.ended)
                    }
                    if let next {
                        line = next
                        break
                    }
                    if ended || !arrived.wait(until: deadline) { break }
                }
                arrived.unlock()
                continuation.resume(returning: line)
            }
        }
    }

    /// Waits off the pool for the process to exit and its output to end; returns its status.
    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                process.waitUntilExit()
                let deadline = Date() + 120
                arrived.lock()
                while !lines.withLock({ $0.ended }), arrived.wait(until: deadline) {}
                arrived.unlock()
                continuation.resume(returning: process.terminationStatus)
            }
        }
    }

    /// The lines not read yet.
    func rest() -> String {
        lines.withLock { state in state.lines.map { $0 + "\n" }.joined() + state.partial }
    }
}

/// Reads `handle` on a thread of its own until its end, handing each piece to `receive`, then `nil`.
///
/// NB: not a `readabilityHandler`: a pipe's FileHandle released (with its Process, on Foundation's
/// own thread) while Dispatch still watched its descriptor crashed the tests in
/// `_dispatch_event_loop_drain`. The thread holds the handle until the end has been read.
func readToTheEnd(_ handle: FileHandle, _ receive: @escaping @Sendable (Data?) -> Void) {
    Thread.detachNewThread {
        while true {
            let data = handle.availableData
            if data.isEmpty { break }
            receive(data)
        }
        receive(nil)
    }
}

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
/// 127.0.0.1, signed by it; a client certificate with no Common Name, signed by it; and another CA,
/// which signed neither.
struct TestCertificates: Sendable {
    let directory: URL
    var authority: URL { directory.appendingPathComponent("ca.pem") }
    var serverCertificate: URL { directory.appendingPathComponent("server.pem") }
    var serverKey: URL { directory.appendingPathComponent("server-key.pem") }
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
        // NB: no Common Name: etcd's gateway refuses a certificate with one when authentication is on.
        try Self.issue("client", subject: "/O=Defaults tests", extensions: "extendedKeyUsage=clientAuth", in: path)
        try Self.issue("named-client", subject: "/CN=billing", extensions: "extendedKeyUsage=clientAuth", in: path)
    }

    /// A key `<name>-key.pem` and a certificate `<name>.pem` for `subject`, signed by the CA.
    private static func issue(_ name: String, subject: String, extensions: String, in path: String) throws {
        let extensionsFile = "\(path)/\(name).ext"
        try Data(extensions.utf8).write(to: URL(fileURLWithPath: extensionsFile))
        try openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
            "-keyout", "\(path)/\(name)-key.pem", "-out", "\(path)/\(name).csr",
        ])
        try openssl([
            "x509", "-req", "-in", "\(path)/\(name).csr", "-CA", "\(path)/ca.pem", "-CAkey", "\(path)/ca-key.pem",
            "-CAcreateserial", "-days", "2", "-extfile", extensionsFile, "-out", "\(path)/\(name).pem",
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
