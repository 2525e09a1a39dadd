// The example service over a real etcd with authentication on, as a fleet runs it: its settings
// under a prefix any instance shares, changed by an operator's `etcdctl put` while it runs; its
// etcd password and its database password both systemd credentials, never in etcd or its output.
import Foundation
import Synchronization
import Testing

@Suite(.serialized) struct GreeterEtcdTests {
    @Test func answersFollowEtcdAndTheEtcdPasswordIsACredential() async throws {
        let etcd = try LocalEtcd.started()
        defer { etcd.stop() }
        let prefix = "/config/greeter/"
        let root = ["--user", "root:root-pw"]
        let password = "etcd-pw-\(UUID().uuidString.prefix(8))"
        for command in [
            ["user", "add", "root:root-pw"], ["user", "grant-role", "root", "root"],
            ["role", "add", "greeter"], ["role", "grant-permission", "greeter", "--prefix=true", "readwrite", prefix],
            ["user", "add", "greeter:\(password)"], ["user", "grant-role", "greeter", "greeter"], ["auth", "enable"],
        ] {
            _ = try etcd.ctl(command)
        }
        let databasePassword = "db-\(UUID().uuidString.prefix(8))"

        try await withService(
            credentials: ["etcd-password": password + "\n", "database.password": databasePassword],
            etcd: "etcd://127.0.0.1:\(etcd.clientPort)\(prefix)?user=greeter&password-credential=etcd-password"
        ) { service in
            #expect(try await service.get("/greet?name=Ada") == (200, "Hello, Ada!\n"))

            // An operator changes the greeting in etcd: the next answer has it.
            _ = try etcd.ctl(root + ["put", "\(prefix)greeting", #""Welcome""#])
            await service.waitForLine(containing: "greeting Welcome")
            #expect(try await service.get("/greet?name=Ada") == (200, "Welcome, Ada!\n"))

            // The rate limit lowered in etcd: the third request of the minute is refused.
            _ = try etcd.ctl(root + ["put", "\(prefix)rateLimit", "2"])
            await service.waitForLine(containing: "rate limit now 2")
            #expect(try await service.get("/greet").status == 200)
            #expect(try await service.get("/greet").status == 200)
            #expect(try await service.get("/greet").status == 429)

            // The database password comes from the credentials directory, not from etcd.
            #expect(
                try await service.get("/database")
                    == (200, "database: connecting with a \(databasePassword.count)-character password\n")
            )

            // The service counted the operator's two puts as changes from elsewhere, with the
            // suite as the dimension. DefaultsService counts off the answers' path, on a queue of
            // its own, and nothing tells when it has: the scrape is asked again until it shows
            // both, for at most 30 s.
            var line: Substring?
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let scraped = try await service.get("/metrics").body
                line = scraped.split(separator: "\n").first { $0.hasPrefix("defaults_changes_from_elsewhere_total{") }
                if line?.hasSuffix(" 2") == true { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(line?.contains("etcd \(prefix) at ") == true, "\(String(describing: line))")
            #expect(line?.hasSuffix(" 2") == true, "\(String(describing: line))")

            // A write the service makes, then SIGTERM: stored in etcd before it exits.
            #expect(try await service.get("/visits", method: "POST") == (200, "1\n"))
            service.terminate()
            #expect(await service.exitStatus() == 0)
            let log = service.lines.all.joined(separator: "\n")
            #expect(!log.contains(password) && !log.contains(databasePassword), "a secret is in the log")
        }
        let stored = try etcd.ctl(root + ["get", "--prefix", prefix])
        #expect(stored.contains("\(prefix)visits\n1\n"), "\(stored)")
        #expect(stored.contains(#""Welcome""#))
        for secret in [password, databasePassword] {
            #expect(!stored.contains(secret), "a secret is in etcd")
        }
    }
}

/// One etcd member on free loopback ports, in a directory of its own, for one test.
final class LocalEtcd: Sendable {
    let clientPort: Int
    private let directory: URL
    private let process: Process
    /// Kept for as long as it runs: a pipe released closes its ends, and etcd must be able to log.
    private let log = Pipe()
    private let exited = DispatchSemaphore(value: 0)

    init() throws {
        let executable = URL(fileURLWithPath: "/usr/bin/etcd")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw Failure(description: "no /usr/bin/etcd: install Debian's etcd-server")
        }
        let ports = try freePorts(2)
        clientPort = ports[0]
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("GreeterEtcd-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let client = "http://127.0.0.1:\(ports[0])"
        let peer = "http://127.0.0.1:\(ports[1])"
        let process = Process()
        process.executableURL = executable
        process.arguments = [
            "--name", "greeter", "--data-dir", directory.appendingPathComponent("data").path,
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", "greeter=\(peer)",
        ]
        process.standardError = log
        process.standardOutput = FileHandle.nullDevice
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        self.process = process
        try process.run()
        // Its own "ready" line, read on a thread that goes on draining the log to the end.
        let ready = DispatchSemaphore(value: 0)
        let served = Mutex(false)
        let reading = log.fileHandleForReading
        Thread.detachNewThread {
            var text = ""
            while true {
                let data = reading.availableData
                if data.isEmpty { break }
                guard !served.withLock({ $0 }) else { continue }
                text += String(decoding: data, as: UTF8.self)
                if text.contains("ready to serve client requests") {
                    served.withLock { $0 = true }
                    ready.signal()
                }
            }
            // Ended before it served: a port taken since it was found free, say.
            if !served.withLock({ $0 }) { ready.signal() }
        }
        guard ready.wait(timeout: .now() + 60) == .success, served.withLock({ $0 }) else {
            stop()
            throw Failure(description: "etcd did not start")
        }
    }

    /// A member started on ports found free, tried again on others if it could not start (another
    /// test's server may take a port between the search and etcd's bind).
    static func started() throws -> LocalEtcd {
        var failure: (any Error)?
        for _ in 0..<3 {
            do { return try LocalEtcd() } catch { failure = error }
        }
        throw failure!
    }

    /// Runs `etcdctl` against this member; what it printed.
    func ctl(_ arguments: [String], input: String = "") throws -> String {
        let tool = Process()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/etcdctl")
        tool.arguments = ["--endpoints", "http://127.0.0.1:\(clientPort)"] + arguments
        tool.environment = ["ETCDCTL_API": "3"]
        let output = Pipe()
        tool.standardOutput = output
        tool.standardError = output
        let standardInput = Pipe()
        tool.standardInput = standardInput
        try tool.run()
        standardInput.fileHandleForWriting.write(Data(input.utf8))
        try standardInput.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        tool.waitUntilExit()
        guard tool.terminationStatus == 0 else { throw Failure(description: "etcdctl \(arguments): \(text)") }
        return text
    }

    /// Stops the member (SIGTERM, then SIGKILL after 30 s) and removes its data.
    func stop() {
        if process.isRunning {
            process.terminate()
            if exited.wait(timeout: .now() + 30) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                exited.wait()
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }
}

/// `count` distinct loopback ports nothing listened on a moment ago (bound together, then freed).
func freePorts(_ count: Int) throws -> [Int] {
    var descriptors: [Int32] = []
    defer { for descriptor in descriptors { close(descriptor) } }
    var ports: [Int] = []
    for _ in 0..<count {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LocalEtcd.Failure(description: "socket() failed") }
        descriptors.append(descriptor)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard named else { throw LocalEtcd.Failure(description: "no free port") }
        ports.append(Int(UInt16(bigEndian: address.sin_port)))
    }
    return ports
}
