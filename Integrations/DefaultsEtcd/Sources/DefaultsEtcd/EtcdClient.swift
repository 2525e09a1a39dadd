import AsyncHTTPClient
import Defaults
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Calls etcd's v3 JSON gateway at one of several endpoints, through async-http-client.
///
/// A call goes to the endpoint that answered last; when it cannot be reached, to the next, so a
/// cluster that loses a member keeps serving. Unary calls block the calling thread (the backend
/// protocol is synchronous; its calls come from a store's flush queue or a `synchronize()`), never
/// a thread of Swift's concurrency pool or of the event loop.
final class EtcdClient: Sendable {
    let endpoints: [URL]
    private let preferred = Mutex(0)
    private let http: HTTPClient
    /// How long one call may take before the next endpoint is tried.
    let timeout: TimeAmount

    init(endpoints: [URL], timeout: Duration) {
        precondition(!endpoints.isEmpty, "DefaultsEtcd: a suite in etcd needs at least one endpoint")
        self.endpoints = endpoints
        self.http = etcdHTTPClient
        let (seconds, attoseconds) = timeout.components
        self.timeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// What the endpoints are called in messages.
    var endpointList: String { endpoints.map(\.absoluteString).joined(separator: ", ") }

    /// Posts `body` to `path` and decodes the answer, trying each endpoint once, the last one that
    /// answered first.
    ///
    /// - Throws: ``Defaults/StorageError/backendFailed(backend:reason:)`` naming what went wrong:
    ///   every endpoint out of reach, or etcd's own error message.
    func call<Response: Decodable>(
        _ path: String,
        _ body: some Encodable,
        as type: Response.Type,
        backend: String
    ) throws(Defaults.StorageError) -> Response {
        let payload: Data
        do {
            payload = try JSONEncoder().encode(body)
        } catch {
            throw .backendFailed(backend: backend, reason: "could not encode a request to \(path): \(error)")
        }
        let first = preferred.withLock { $0 }
        var failures: [String] = []
        for offset in 0..<endpoints.count {
            let index = (first + offset) % endpoints.count
            let url = endpoints[index].appendingPathComponent(path).absoluteString
            let response: HTTPClient.Response
            do {
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "application/json")
                let request = try HTTPClient.Request(url: url, method: .POST, headers: headers, body: .data(payload))
                response = try http.execute(request: request, deadline: .now() + timeout).wait()
            } catch {
                failures.append("\(endpoints[index].absoluteString): \(error)")
                continue
            }
            let bytes = response.body.map { Data($0.readableBytesView) } ?? Data()
            guard response.status == .ok else {
                let message = (try? JSONDecoder().decode(Etcd.ErrorBody.self, from: bytes))
                    .flatMap { $0.message ?? $0.error }
                // NB: a member that lost its quorum answers 503 ("etcdserver: no leader" and the
                // like): another member may have one.
                if response.status.code >= 500 {
                    failures.append("\(endpoints[index].absoluteString): \(message ?? "\(response.status)")")
                    continue
                }
                throw .backendFailed(
                    backend: backend,
                    reason: "etcd refused \(path): \(message ?? "\(response.status)")"
                )
            }
            preferred.withLock { $0 = index }
            do {
                return try JSONDecoder().decode(Response.self, from: bytes)
            } catch {
                throw .backendFailed(backend: backend, reason: "etcd's answer to \(path) did not decode: \(error)")
            }
        }
        throw .backendFailed(backend: backend, reason: "etcd is out of reach (\(failures.joined(separator: "; ")))")
    }

    /// Opens a watch with `body` at the endpoint `index`, and hands each message of its stream to
    /// `receive`, in order, on the event loop, until the stream ends, fails, or `receive` returns
    /// `false`.
    ///
    /// - Returns: The request: `cancel()` ends it; its `futureResult` completes when it has ended.
    func startWatch(
        _ body: Etcd.WatchCreateRequest,
        at index: Int,
        receive: @escaping @Sendable (Etcd.WatchMessage) -> Bool
    ) throws -> HTTPClient.Task<Void> {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        let url = endpoints[index].appendingPathComponent("v3/watch").absoluteString
        let request = try HTTPClient.Request(
            url: url,
            method: .POST,
            headers: headers,
            body: .data(try JSONEncoder().encode(body))
        )
        // NB: a watch lasts as long as the suite: no deadline but cancellation.
        let stream = WatchStream(endpoint: endpoints[index].absoluteString, receive: receive) { [self] in
            preferred.withLock { $0 = index }
        }
        return http.execute(request: request, delegate: stream)
    }

    /// The endpoint to watch from first.
    var preferredIndex: Int { preferred.withLock { $0 } }

    struct WatchError: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }
}

/// The body of a watch, split into its messages (the gateway ends each with a newline) as it
/// arrives.
///
/// `@unchecked Sendable`: async-http-client calls it on its task's event loop only.
private final class WatchStream: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Void

    private let endpoint: String
    private let receive: @Sendable (Etcd.WatchMessage) -> Bool
    private let answered: @Sendable () -> Void
    private var pending: [UInt8] = []
    private var ended = false

    init(
        endpoint: String,
        receive: @escaping @Sendable (Etcd.WatchMessage) -> Bool,
        answered: @escaping @Sendable () -> Void
    ) {
        self.endpoint = endpoint
        self.receive = receive
        self.answered = answered
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        if head.status == .ok {
            answered()
        } else {
            ended = true
            task.fail(reason: EtcdClient.WatchError(reason: "\(endpoint) answered the watch with \(head.status)"))
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard !ended else { return task.eventLoop.makeSucceededVoidFuture() }
        pending.append(contentsOf: buffer.readableBytesView)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = Array(pending[..<newline])
            pending.removeSubrange(...newline)
            guard line.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\r") }) else { continue }
            guard let message = try? JSONDecoder().decode(Etcd.WatchMessage.self, from: Data(line)) else {
                ended = true
                task.fail(reason: EtcdClient.WatchError(reason: "a watch message did not decode"))
                break
            }
            if !receive(message) {
                ended = true
                task.cancel()
                break
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}

/// The HTTP client of every suite in etcd of the process; like AsyncHTTPClient's `shared`, never
/// shut down.
///
/// NB: not `shared` itself: its pool retries a refused connection until the call's deadline, so
/// each member that was down cost a whole timeout (5 s) before the next was tried, and the
/// `defaults` command took 5 s to say etcd is out of reach. Here a refused connection fails the
/// call at once.
private let etcdHTTPClient: HTTPClient = {
    var configuration = HTTPClient.Configuration.singletonConfiguration
    configuration.connectionPool.retryConnectionEstablishment = false
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
}()
