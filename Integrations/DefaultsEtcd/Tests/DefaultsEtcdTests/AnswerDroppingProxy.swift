import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP proxy in front of an etcd member that can lose answers: the request reaches etcd,
/// etcd does the work, and its answer never comes back (the connection is cut or reset instead), as
/// when a network or a member fails after a write was applied.
///
/// It can also stall, as a member behind a network that went quiet: it forwards nothing, either
/// way, on every connection, or on all but the watches'. And a request whose client gave up before
/// etcd answered still reaches etcd, which finds it when it goes on (a member stopped with SIGSTOP
/// applies the requests it held once it is let go): its answer is lost.
final class AnswerDroppingProxy: Sendable {
    let url: URL
    private let listener: Int32
    /// How many answers to transactions that write are still to be lost, how many to let through
    /// first, how, and what the proxy does after it lost one.
    private let drops = Mutex<(count: Int, passing: Int, how: Loss, then: Stall?, matching: Match)>(
        (0, 0, .cut, nil, .writes)
    )
    /// How many answers to writes were lost: on purpose, or because the client had gone.
    private let dropped = Mutex(0)
    /// What the proxy holds up now; `nil`: nothing.
    private let stalled = Mutex<Stall?>(nil)
    /// Signalled when an answer is lost, and when a stall ends.
    private let changed = NSCondition()

    /// How an answer is lost.
    enum Loss: Sendable {
        /// The connection is closed, before any byte of the answer.
        case cut
        /// Part of the answer goes through, then the connection is reset (RST).
        case resetMidAnswer
    }

    /// Which requests' answers are lost.
    enum Match: Sendable {
        /// Transactions that write (`POST /v3/kv/txn` with a put or a removal), read in plain HTTP.
        case writes
        /// The next request on any connection, whatever it is: for TLS, which the proxy cannot
        /// read. (The connection must be open already: a new one's first bytes are a handshake.)
        case nextRequest
    }

    /// What a stall holds up.
    enum Stall: Sendable, Equatable {
        /// Every connection, the watches' too.
        case everything
        /// Every connection but the watches'.
        case allButWatches
    }

    /// Starts forwarding a free loopback port to `target`'s port; the proxy's URL has `target`'s
    /// scheme (the proxy forwards TLS as it is).
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
        url = URL(string: "\(target.scheme ?? "http")://127.0.0.1:\(UInt16(bigEndian: address.sin_port))")!
        Thread.detachNewThread { [self] in accept(forwardingTo: targetPort) }
    }

    /// Stops taking connections, and ends any stall (those open go on until either side ends them).
    ///
    /// NB: a test must call it: the thread that takes connections holds the proxy until then.
    func close() {
        resume()
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        Glibc.close(listener)
    }

    /// Loses the answers to the next `count` requests `matching` names, once `passing` more have
    /// gone through, as `how` says; then, if `then` is given, stalls so, from before the client
    /// hears of it.
    func dropAnswers(
        _ count: Int,
        how: Loss = .cut,
        then: Stall? = nil,
        matching: Match = .writes,
        afterPassing passing: Int = 0
    ) {
        drops.withLock { $0 = (count, passing, how, then, matching) }
    }

    /// How many answers to writes were lost so far.
    var droppedCount: Int { dropped.withLock { $0 } }

    /// Waits, off the pool, until `count` answers to writes were lost, or 120 s passed (a deadline
    /// against a hang); whether they were.
    func waitUntilDropped(_ count: Int) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date() + 120
                changed.lock()
                while droppedCount < count, changed.wait(until: deadline) {}
                let reached = droppedCount >= count
                changed.unlock()
                continuation.resume(returning: reached)
            }
        }
    }

    /// Forwards nothing on the connections `what` names, open or new, until ``resume()``.
    func stall(_ what: Stall) {
        changed.lock()
        stalled.withLock { $0 = what }
        changed.broadcast()
        changed.unlock()
    }

    /// Forwards everything again, what was held first.
    func resume() {
        changed.lock()
        stalled.withLock { $0 = nil }
        changed.broadcast()
        changed.unlock()
    }

    /// Returns once a connection (a watch's or not) may forward.
    private func waitWhileStalled(isWatch: Bool) {
        changed.lock()
        while let stall = stalled.withLock({ $0 }), !(stall == .allButWatches && isWatch) { changed.wait() }
        changed.unlock()
    }

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
        /// The request bytes since the last answer: whether they write, whether the answer to
        /// them is to be lost (and how), and whether it is awaited.
        let request = Mutex<Request>(Request())
        /// Whether the connection is a watch's (it asked for one: the flag stays).
        let isWatch = Mutex(false)
        /// Whether the client's side was closed (the client left, or the proxy cut it).
        let clientClosed = Mutex(false)
        let closed = Mutex(false)

        struct Request {
            var bytes: [UInt8] = []
            var writes = false
            var loss: Loss?
            var awaited = false
        }

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
            clientClosed.withLock { $0 = true }
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
        }

        /// Closes the client's side only: the member's stays open for the answer it owes.
        func leaveClient() {
            clientClosed.withLock { $0 = true }
            shutdown(client, Int32(SHUT_RDWR))
        }

        /// Resets the client's connection (it gets an RST, not a FIN), and cuts the member's.
        func reset() {
            let first = closed.withLock { closed in
                defer { closed = true }
                return !closed
            }
            guard first else { return }
            clientClosed.withLock { $0 = true }
            // NB: with a linger of zero, the close in `deinit` resets the connection; the
            // shutdown for reading only wakes the thread that reads it, and sends nothing.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            shutdown(client, Int32(SHUT_RD))
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
            let isWatch = connection.request.withLock { request in
                request.bytes += chunk
                request.awaited = true
                let text = String(decoding: request.bytes, as: UTF8.self)
                if text.contains("POST /v3/watch") { connection.isWatch.withLock { $0 = true } }
                let matching = drops.withLock { $0.matching }
                let writes =
                    text.contains("POST /v3/kv/txn")
                    && (text.contains("request_put") || text.contains("request_delete_range"))
                if !request.writes, writes || matching == .nextRequest {
                    request.writes = true
                    request.loss = drops.withLock { drops in
                        guard drops.count > 0 else { return nil }
                        guard drops.passing == 0 else {
                            drops.passing -= 1
                            return nil
                        }
                        drops.count -= 1
                        return drops.how
                    }
                }
                return connection.isWatch.withLock { $0 }
            }
            waitWhileStalled(isWatch: isWatch)
            guard writeAll(connection.server, chunk) else { break }
        }
        // The client left. A request etcd has not answered yet stays with etcd, which may be
        // stopped and find it when it goes on; its answer is lost then. (Not a watch's: it owes
        // no answer but the next event.)
        let awaited = connection.request.withLock { $0.awaited }
        if awaited, !connection.isWatch.withLock({ $0 }) {
            connection.leaveClient()
        } else {
            connection.cut()
        }
    }

    private func forwardAnswers(_ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(connection.server, &buffer, buffer.count)
            guard count > 0 else { break }
            waitWhileStalled(isWatch: connection.isWatch.withLock { $0 })
            let (request, clientGone) = connection.request.withLock { request in
                defer { request = Connection.Request() }
                return (request, connection.clientClosed.withLock { $0 })
            }
            if request.loss != nil || clientGone {
                // NB: etcd has done the work and answered: the answer goes nowhere.
                lose(request, in: connection, answer: Array(buffer[..<count]), clientGone: clientGone)
                return
            }
            guard writeAll(connection.client, Array(buffer[..<count])) else { break }
        }
        connection.cut()
    }

    /// Loses `answer`, the answer to `request`: counted if the request wrote; the stall asked
    /// for begins before the client can hear of the loss.
    private func lose(_ request: Connection.Request, in connection: Connection, answer: [UInt8], clientGone: Bool) {
        let then = request.loss == nil ? nil : drops.withLock { $0.then }
        changed.lock()
        if request.writes { dropped.withLock { $0 += 1 } }
        if let then { stalled.withLock { $0 = then } }
        changed.broadcast()
        changed.unlock()
        if request.loss == .resetMidAnswer, !clientGone {
            _ = writeAll(connection.client, Array(answer.prefix(answer.count / 2)))
            connection.reset()
        } else {
            connection.cut()
        }
    }

    private func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            // NB: no SIGPIPE when the other side has gone: the write fails instead.
            let written = bytes[offset...]
                .withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}
