import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP proxy in front of an etcd member that can lose answers: the request reaches etcd,
/// etcd does the work, and its answer never comes back (the connection is cut instead), as when a
/// network or a member fails after a write was applied.
final class AnswerDroppingProxy: Sendable {
    let url: URL
    private let listener: Int32
    /// How many answers to transactions that write are still to be lost.
    private let drops = Mutex(0)
    /// How many answers were lost.
    private let dropped = Mutex(0)

    /// Starts forwarding a free loopback port to `target`'s port.
    init(to target: URL) throws {
        let targetPort = UInt16(target.port ?? 2379)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw EtcdServer.ServerError(description: "socket() failed") }
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && listen(descriptor, 64) == 0
                    && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw EtcdServer.ServerError(description: "the proxy could not listen")
        }
        listener = descriptor
        url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))")!
        Thread.detachNewThread { [self] in accept(forwardingTo: targetPort) }
    }

    /// Stops taking connections (those open go on until either side ends them).
    ///
    /// NB: a test must call it: the thread that takes connections holds the proxy until then.
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        Glibc.close(listener)
    }

    /// Loses the answers to the next `count` transactions that write (`POST /v3/kv/txn` with a put).
    func dropAnswers(_ count: Int) {
        drops.withLock { $0 = count }
    }

    /// How many answers were lost so far.
    var droppedCount: Int { dropped.withLock { $0 } }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
    }

    private func accept(forwardingTo port: UInt16) {
        while true {
            let client = Glibc.accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: port)
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard connected else {
                Glibc.close(client)
                Glibc.close(server)
                continue
            }
            let connection = Connection(client: client, server: server)
            Thread.detachNewThread { [self] in forwardRequests(connection) }
            Thread.detachNewThread { [self] in forwardAnswers(connection) }
        }
    }

    /// One client's connection and the proxy's to etcd.
    private final class Connection: Sendable {
        let client: Int32
        let server: Int32
        /// The request bytes since the last answer, and whether the answer to them is to be lost.
        let request = Mutex<(bytes: [UInt8], loseAnswer: Bool)>(([], false))
        let closed = Mutex(false)

        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }

        /// Cuts both connections.
        func cut() {
            let first = closed.withLock { closed in
                defer { closed = true }
                return !closed
            }
            guard first else { return }
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
        }

        deinit {
            Glibc.close(client)
            Glibc.close(server)
        }
    }

    private func forwardRequests(_ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(connection.client, &buffer, buffer.count)
            guard count > 0 else { break }
            let chunk = Array(buffer[..<count])
            connection.request.withLock { request in
                request.bytes += chunk
                let text = String(decoding: request.bytes, as: UTF8.self)
                if !request.loseAnswer, text.contains("POST /v3/kv/txn"), text.contains("request_put") {
                    request.loseAnswer = drops.withLock { drops in
                        guard drops > 0 else { return false }
                        drops -= 1
                        return true
                    }
                }
            }
            guard writeAll(connection.server, chunk) else { break }
        }
        connection.cut()
    }

    private func forwardAnswers(_ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(connection.server, &buffer, buffer.count)
            guard count > 0 else { break }
            let lose = connection.request.withLock { request in
                defer { request = ([], false) }
                return request.loseAnswer
            }
            if lose {
                // NB: etcd has done the work and answered: the answer goes nowhere.
                dropped.withLock { $0 += 1 }
                break
            }
            guard writeAll(connection.client, Array(buffer[..<count])) else { break }
        }
        connection.cut()
    }

    private func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}
