import Foundation

/// A real etcd server on a free loopback port, its data in a temporary folder, for one test.
final class Etcd: Sendable {
    let directory: URL
    let port: Int
    private let process: Process

    init() throws {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        directory = URL(fileURLWithPath: base).appendingPathComponent("DefaultsEditorEtcdTests-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (client, peer) = (try Self.freePort(), try Self.freePort())
        port = client
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/etcd")
        let clientURL = "http://127.0.0.1:\(client)"
        let peerURL = "http://127.0.0.1:\(peer)"
        process.arguments = [
            "--name", "test", "--data-dir", directory.appendingPathComponent("data").path,
            "--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
            "--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
            "--initial-cluster", "test=\(peerURL)",
        ]
        let log = Pipe()
        process.standardError = log
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Serving once it says so (etcd 3.4 logs "ready to serve client requests").
        let text = read(log.fileHandleForReading, until: "ready to serve client requests")
        guard text.contains("ready to serve client requests") else {
            throw Failed(description: "etcd ended before serving: \(text.suffix(2000))")
        }
        // The rest of its log, read so that etcd never blocks on a full pipe.
        Thread.detachNewThread { while !log.fileHandleForReading.availableData.isEmpty {} }
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A loopback port no one listens on now (bound to port 0, then released).
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failed(description: "socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw Failed(description: "bind() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    struct Failed: Error, CustomStringConvertible {
        let description: String
    }
}
