import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Collects etcd's answer to one unary call, and notes whether the request went out whole.
///
/// A request that did not (the connection was refused, the TLS handshake failed or stalled, the
/// deadline passed while connecting) reached no member whole, so etcd did nothing with it: a
/// change can go to the next member without any risk of being applied twice.
final class EtcdAnswerCollector: HTTPClientResponseDelegate, Sendable {
    /// The status and body of an answer.
    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var body: Data
    }

    private struct State {
        var wasSent = false
        var status: HTTPResponseStatus?
        var body = Data()
    }

    private let state = Mutex(State())

    /// Whether the whole request was written to the connection.
    ///
    /// Read once the call has ended: async-http-client says so on the event loop as soon as the
    /// last byte is written, before anything that could end the call.
    var wasSent: Bool { state.withLock { $0.wasSent } }

    func didSendRequest(task: HTTPClient.Task<Answer>) {
        state.withLock { $0.wasSent = true }
    }

    func didReceiveHead(task: HTTPClient.Task<Answer>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        state.withLock { $0.status = head.status }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Answer>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        state.withLock { $0.body.append(contentsOf: buffer.readableBytesView) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Answer>) throws -> Answer {
        state.withLock { Answer(status: $0.status ?? .ok, body: $0.body) }
    }
}
