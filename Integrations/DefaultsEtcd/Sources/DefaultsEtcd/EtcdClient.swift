import AsyncHTTPClient
import Defaults
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
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
    /// How `https` endpoints are reached; `nil`: as async-http-client does by default.
    private let tls: TLSConfiguration?
    /// The files `tls` was made from, to say what is wrong when a handshake fails.
    let tlsFiles: EtcdTLS?
    /// Why the TLS files could not be read, if they could not: every call fails with it.
    private let tlsProblem: String?
    /// Who the client logs in as; `nil` for a cluster with authentication off.
    let credentials: EtcdCredentials?
    /// The login: the token, and a password etcd refused.
    let session = Mutex(Session())

    init(endpoints: [URL], timeout: Duration, tls: EtcdTLS? = nil, credentials: EtcdCredentials? = nil) {
        precondition(!endpoints.isEmpty, "DefaultsEtcd: a suite in etcd needs at least one endpoint")
        self.endpoints = endpoints
        self.http = etcdHTTPClient
        self.timeout = TimeAmount(timeout)
        self.credentials = credentials
        self.tlsFiles = tls
        do {
            self.tls = try tls?.configuration()
            self.tlsProblem = nil
        } catch {
            self.tls = nil
            self.tlsProblem = "the client certificate or key could not be read (\(error))"
        }
    }

    /// What the endpoints are called in messages.
    var endpointList: String { endpoints.map(\.absoluteString).joined(separator: ", ") }

    /// Posts `body` to `path` and decodes the answer, trying each endpoint once, the last one that
    /// answered first: for calls that may be sent again whatever became of them (reads, and
    /// transactions that only compare and read).
    ///
    /// - Throws: ``Defaults/StorageError/backendFailed(backend:reason:)`` naming what went wrong:
    ///   every endpoint out of reach, or etcd's own error message.
    ///
    /// - Parameters:
    ///   - reportsRefusal: Whether the caller reports what it throws: a refused password is then
    ///     counted as reported (see ``claimRefusalReport()``).
    ///   - forWrite: Whether the call is the first step of a write: a refusal (a password, a
    ///     permission) is then the write's (``Defaults/StorageError/writeRefused(backend:reason:)``).
    func call<Response: Decodable>(
        _ path: String,
        _ body: some Encodable,
        as type: Response.Type,
        backend: String,
        reportsRefusal: Bool = true,
        forWrite: Bool = false
    ) throws(Defaults.StorageError) -> Response {
        switch try exchange(
            path,
            body,
            as: type,
            backend: backend,
            isIdempotent: true,
            isWrite: forWrite,
            reportsRefusal: reportsRefusal
        ) {
        case .answered(let response): return response
        case .unknown(let reason): throw .backendFailed(backend: backend, reason: reason)
        }
    }

    /// Posts `body`, a change, to `path`, never applied twice.
    ///
    /// It goes to the next endpoint only when it is known not to have reached etcd (the connection
    /// was refused, or the member said it has no leader, which it says before it does anything).
    /// When the request went out and no answer came back (a deadline, a connection closed,
    /// "request timed out"), it may have been applied: the caller is told, to find out (etcd's own
    /// clients never send a change twice either).
    func send<Response: Decodable>(
        _ path: String,
        _ body: some Encodable,
        as type: Response.Type,
        backend: String
    ) throws(Defaults.StorageError) -> Outcome<Response> {
        try exchange(path, body, as: type, backend: backend, isIdempotent: false, isWrite: true)
    }

    /// What became of a change sent to etcd.
    enum Outcome<Response> {
        /// etcd answered.
        case answered(Response)
        /// The request went out and no answer came: it may or may not have been applied.
        case unknown(reason: String)
    }

    private func exchange<Response: Decodable>(
        _ path: String,
        _ body: some Encodable,
        as type: Response.Type,
        backend: String,
        isIdempotent: Bool,
        isWrite: Bool,
        reportsRefusal: Bool = true
    ) throws(Defaults.StorageError) -> Outcome<Response> {
        let payload: Data
        do {
            payload = try JSONEncoder().encode(body)
        } catch {
            throw .backendFailed(backend: backend, reason: "could not encode a request to \(path): \(error)")
        }
        var token: String?
        do {
            token = try self.token(fresh: false)
        } catch {
            if reportsRefusal, error.refusesCredentials { markRefusalReported() }
            throw error.storageError(backend: backend, isWrite: isWrite)
        }
        var loggedInAgain = false
        while true {
            switch try post(path, payload, token: token, backend: backend, isIdempotent: isIdempotent) {
            case .ok(let bytes):
                do {
                    return .answered(try JSONDecoder().decode(Response.self, from: bytes))
                } catch {
                    throw .backendFailed(backend: backend, reason: "etcd's answer to \(path) did not decode: \(error)")
                }
            case .unknown(let reason):
                return .unknown(reason: reason)
            case .refused(let status, let message):
                // A token that expired, or that a restarted member forgot, or one from before
                // authentication was turned on: etcd refuses the request before doing anything,
                // so it is sent again, once, with a new token.
                if credentials != nil, !loggedInAgain, Self.asksToLogIn(status, message) {
                    loggedInAgain = true
                    forget(token)
                    do {
                        // Not `fresh`: another call may have logged in again already.
                        token = try self.token(fresh: false)
                    } catch {
                        if reportsRefusal, error.refusesCredentials { markRefusalReported() }
                        throw error.storageError(backend: backend, isWrite: isWrite)
                    }
                    continue
                }
                throw refusal(of: path, status: status, message, backend: backend, isWrite: isWrite)
            }
        }
    }

    /// What an endpoint said to a request.
    enum Answer {
        /// The body of a `200 OK`.
        case ok(Data)
        /// etcd refused the request (a 4xx status), before doing anything.
        case refused(HTTPResponseStatus, String)
        /// A change went out and no answer came back.
        case unknown(String)
    }

    /// Posts `payload` to `path` at the endpoints, the one that answered last first (or `start`),
    /// until one answers; a change goes to the next only when it certainly did not reach the one
    /// before.
    func post(
        _ path: String,
        _ payload: Data,
        token: String?,
        backend: String,
        isIdempotent: Bool,
        startingAt start: Int? = nil
    ) throws(Defaults.StorageError) -> Answer {
        if let tlsProblem { throw .backendFailed(backend: backend, reason: tlsProblem) }
        var headers = Self.headers
        if let token, !token.isEmpty { headers.add(name: "Authorization", value: token) }
        let first = start ?? preferred.withLock { $0 }
        var failures: [String] = []
        var refusedHandshakes = 0
        for offset in 0..<endpoints.count {
            let index = (first + offset) % endpoints.count
            let endpoint = endpoints[index].absoluteString
            let url = endpoints[index].appendingPathComponent(path).absoluteString
            let response: EtcdAnswerCollector.Answer
            let collector = EtcdAnswerCollector()
            do {
                let request = try HTTPClient.Request(
                    url: url,
                    method: .POST,
                    headers: headers,
                    body: .data(payload),
                    tlsConfiguration: tls
                )
                response = try http.execute(request: request, delegate: collector, deadline: .now() + timeout)
                    .futureResult.wait()
            } catch {
                leave(index)
                // A refused handshake comes before etcd reads anything (in TLS 1.3 the client
                // may have written the request when the member's refusal of its certificate comes).
                if let refusal = tlsRefusal(error, at: endpoints[index]) {
                    failures.append("\(endpoint): \(refusal)")
                    refusedHandshakes += 1
                    continue
                }
                // Only a request that went out whole can have been applied.
                if !isIdempotent, collector.wasSent, !Self.wasNeverSent(error) {
                    return .unknown("no answer from \(endpoint) to \(path) (\(error))")
                }
                failures.append("\(endpoint): \(error)")
                continue
            }
            let bytes = response.body
            guard response.status == .ok else {
                // The gateway says some refusals in plain text (a certificate with a Common
                // Name when authentication is on).
                let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                let said =
                    (try? JSONDecoder().decode(Etcd.ErrorBody.self, from: bytes))?.text ?? (text.isEmpty ? nil : text)
                let message = said ?? "\(response.status)"
                // A member cut off from its quorum answers 503 ("etcdserver: no leader" before
                // it does anything, as the require-leader header asks; "request timed out" after it
                // tried): another member may have a leader.
                if response.status.code >= 500 {
                    leave(index)
                    if !isIdempotent, !Self.saysNoLeader(said) {
                        return .unknown("\(endpoint) answered \(path) with \(message)")
                    }
                    failures.append("\(endpoint): \(message)")
                    continue
                }
                return .refused(response.status, message)
            }
            preferred.withLock { $0 = index }
            return .ok(bytes)
        }
        if refusedHandshakes == endpoints.count {
            throw .backendFailed(
                backend: backend,
                reason: "no member of etcd completed the TLS handshake (\(failures.joined(separator: "; ")))"
            )
        }
        throw .backendFailed(backend: backend, reason: "etcd is out of reach (\(failures.joined(separator: "; ")))")
    }

    /// The error for a request etcd refused (a 4xx status), said as what it is.
    func refusal(
        of path: String,
        status: HTTPResponseStatus,
        _ message: String,
        backend: String,
        isWrite: Bool
    ) -> Defaults.StorageError {
        if message.contains("permission denied") {
            let who = credentials.map { "user \"\($0.user)\"" } ?? "a client without a user"
            if isWrite {
                return .writeRefused(backend: backend, reason: "\(who) may not write these keys in etcd (\(message))")
            }
            return .backendFailed(backend: backend, reason: "\(who) may not read these keys in etcd (\(message))")
        }
        if message.contains("CommonName of client") {
            return .backendFailed(
                backend: backend,
                reason:
                    "etcd refuses a client certificate with a Common Name through its JSON gateway when authentication is on (\(message)); use one without a Common Name, and a user and password"
            )
        }
        return .backendFailed(backend: backend, reason: Self.refusal(of: path, status: status, message))
    }

    /// Why a call to etcd could not be made, for a person; also what a watch that could not start,
    /// or ended, fails with.
    struct Failure: Error, CustomStringConvertible {
        let reason: String
        /// Whether etcd refused the user's password.
        var refusesCredentials = false
        /// Whether nobody reported this refusal of the password yet, when it was thrown.
        var isNews = true
        /// Whether etcd answered and refused a watch (created it and canceled it at once: a
        /// permission denied, a token refused): a problem of its own, not a member out of reach.
        var refusesWatch = false
        var description: String { reason }

        /// The error of a call that failed so: a write refused when the password is.
        func storageError(backend: String, isWrite: Bool) -> Defaults.StorageError {
            if refusesCredentials, isWrite { return .writeRefused(backend: backend, reason: reason) }
            return .backendFailed(backend: backend, reason: reason)
        }
    }

    /// Moves the next calls off the endpoint `index`, which failed one: they go to the next.
    private func leave(_ index: Int) {
        preferred.withLock { if $0 == index { $0 = (index + 1) % endpoints.count } }
    }

    /// The headers of every request: JSON, and etcd's require-leader metadata, so a member cut off
    /// from its quorum says so at once ("no leader"), and ends a watch it serves instead of
    /// keeping it open and silent.
    static let headers: HTTPHeaders = {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Grpc-Metadata-Hasleader", value: "true")
        return headers
    }()

    /// Opens a watch with `body` at the endpoint `index`, and hands each message of its stream to
    /// `receive`, in order, on the event loop, until the stream ends, fails, or `receive` says so.
    ///
    /// The request's body stays open after the watch is created, and a progress request goes on it
    /// every `heartbeat`: a member that has sent nothing since the last one (it is stalled, or the
    /// connection is half open) fails the watch, so it can move to another member. An error etcd
    /// writes in the stream (a member that lost its leader ends its watches so) fails it too.
    ///
    /// - Returns: The request: `cancel()` ends it; its `futureResult` completes when it has ended.
    func startWatch(
        _ body: Etcd.WatchCreateRequest,
        at index: Int,
        heartbeat: TimeAmount,
        receive: @escaping @Sendable (Etcd.WatchMessage) -> WatchVerdict
    ) throws -> HTTPClient.Task<Void> {
        if let tlsProblem { throw Failure(reason: tlsProblem) }
        // Logged in anew before each connection, as etcd's own client does (a watch made with
        // a token that expired is created and canceled at once), at the member to be watched: the
        // one that answered last may be the one that stalled.
        let token = try token(fresh: true, startingAt: index)
        let endpoint = endpoints[index].absoluteString
        let url = endpoints[index].appendingPathComponent("v3/watch").absoluteString
        let create = try JSONEncoder().encode(body)
        let stream = WatchStream(endpoint: endpoint, heartbeat: heartbeat, receive: receive) { [self] in
            preferred.withLock { $0 = index }
        }
        // Chunked and never ended by this side: the gateway passes each JSON object of the
        // body to etcd as it comes, and async-http-client reads the answer meanwhile. It also
        // arms its idle read timeout only once a body has ended, so a quiet watch has none.
        // With `Expect: 100-continue`: without it, etcd 3.4.23's gateway answered nothing
        // while the body was open (measured); with it, each object is answered as it arrives.
        // async-http-client sends the body at once and passes over the `100 Continue`.
        var headers = Self.headers
        headers.add(name: "Expect", value: "100-continue")
        if let token, !token.isEmpty { headers.add(name: "Authorization", value: token) }
        let request = try HTTPClient.Request(
            url: url,
            method: .POST,
            headers: headers,
            body: .stream(contentLength: nil) { writer in stream.opened(writer, sending: create) },
            tlsConfiguration: tls
        )
        // A watch lasts as long as the suite: no deadline but the heartbeat's, and cancellation.
        let task = http.execute(request: request, delegate: stream)
        stream.started(task)
        return task
    }

    /// What a watch does after a message.
    enum WatchVerdict: Sendable {
        /// Goes on.
        case more
        /// Ends, as asked.
        case end
        /// Ends, failed for this reason.
        case fail(String)
        /// Ends: etcd refused the watch, for this reason.
        case refused(String)
    }

    /// The endpoint to watch from first.
    var preferredIndex: Int { preferred.withLock { $0 } }
}

/// The HTTP client of every suite in etcd of the process; like AsyncHTTPClient's `shared`, never
/// shut down.
///
/// Not `shared` itself: its pool retries a refused connection until the call's deadline, so
/// each member that was down cost a whole timeout (5 s) before the next was tried, and the
/// `defaults` command took 5 s to say etcd is out of reach. Here a refused connection fails the
/// call at once.
private let etcdHTTPClient: HTTPClient = {
    var configuration = HTTPClient.Configuration.singletonConfiguration
    configuration.connectionPool.retryConnectionEstablishment = false
    // HTTP/1.1 even over TLS, where ALPN could choose HTTP/2: the watch's request body, kept
    // open, was measured against etcd's gateway over HTTP/1.1.
    configuration.httpVersion = .http1Only
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
}()
