import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// One watch's stream: the request's body, kept open for heartbeats, and the answer, split into
/// its messages (the gateway ends each with a newline, but for an error it writes last) as it
/// arrives.
///
/// async-http-client calls the delegate on the task's event loop; the heartbeat runs there too,
/// and the body is written from wherever async-http-client asks for it: the state is locked.
final class WatchStream: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void

    private let endpoint: String
    private let heartbeat: TimeAmount
    private let receive: @Sendable (Etcd.WatchMessage) -> EtcdClient.WatchVerdict
    private let answered: @Sendable () -> Void

    private struct State {
        var pending: [UInt8] = []
        var ended = false
        /// Whether anything came from etcd since the last heartbeat (or the create) went out.
        var heard = false
        /// Ticks in a row with nothing from etcd.
        var silentTicks = 0
        var writer: HTTPClient.Body.StreamWriter?
        /// Ends the request's body: completed when the watch ends, never before.
        var bodyEnd: EventLoopPromise<Void>?
        var task: HTTPClient.Task<Void>?
        var beat: RepeatedTask?
    }

    private let state = Mutex(State())

    init(
        endpoint: String,
        heartbeat: TimeAmount,
        receive: @escaping @Sendable (Etcd.WatchMessage) -> EtcdClient.WatchVerdict,
        answered: @escaping @Sendable () -> Void
    ) {
        self.endpoint = endpoint
        self.heartbeat = heartbeat
        self.receive = receive
        self.answered = answered
    }

    /// The body's start: the create request; the body then stays open until the watch ends.
    func opened(_ writer: HTTPClient.Body.StreamWriter, sending create: Data) -> EventLoopFuture<Void> {
        let written = writer.write(.byteBuffer(ByteBuffer(bytes: create)))
        let end = written.eventLoop.makePromise(of: Void.self)
        let ended = state.withLock { state in
            state.writer = writer
            state.bodyEnd = end
            return state.ended
        }
        if ended { end.succeed() }
        return end.futureResult
    }

    /// The task has started: the heartbeat begins, and ends with it.
    ///
    /// It ticks twice a heartbeat. A tick after something came from etcd sends a progress request;
    /// a second tick in a row with nothing ends the watch: a request unanswered for a whole
    /// heartbeat. So a member that stalls is left between one and one and a half heartbeats later.
    func started(_ task: HTTPClient.Task<Void>) {
        let tick = TimeAmount.nanoseconds(heartbeat.nanoseconds / 2)
        let repeating = task.eventLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { [self] _ in
            self.beat(task)
        }
        state.withLock { state in
            state.task = task
            state.beat = repeating
        }
        task.futureResult.whenComplete { [self] _ in finish() }
    }

    /// One tick: a progress request goes out if etcd sent something since the last tick; after two
    /// ticks in a row with nothing, the watch fails.
    private func beat(_ task: HTTPClient.Task<Void>) {
        let (writer, stalled) = state.withLock { state -> (HTTPClient.Body.StreamWriter?, Bool) in
            guard !state.ended else { return (nil, false) }
            if !state.heard {
                state.silentTicks += 1
                guard state.silentTicks >= 2 else { return (nil, false) }
                state.ended = true
                return (nil, true)
            }
            state.heard = false
            state.silentTicks = 0
            return (state.writer, false)
        }
        if stalled {
            let seconds = Double(heartbeat.nanoseconds) / 1e9
            task.fail(
                reason: EtcdClient.Failure(
                    reason:
                        "\(endpoint) sent nothing for \(seconds.formatted(.number.precision(.fractionLength(0...1)))) s"
                )
            )
            return
        }
        // Answered at once with a header-only message (etcd 3.4.23: `watch_id` -1). Before
        // etcd 3.4.25 and 3.5.8 that answer is no point the watch has passed, so it only counts as
        // a sign of life.
        if let writer, let request = try? JSONEncoder().encode(Etcd.WatchProgressRequest()) {
            _ = writer.write(.byteBuffer(ByteBuffer(bytes: request)))
        }
    }

    /// The watch has ended: the heartbeat stops, and the body ends.
    private func finish() {
        let (beat, end) = state.withLock { state in
            state.ended = true
            defer {
                state.beat = nil
                state.bodyEnd = nil
                state.writer = nil
                state.task = nil
            }
            return (state.beat, state.bodyEnd)
        }
        beat?.cancel()
        end?.succeed()
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let ended = state.withLock { state in
            state.heard = true
            if head.status != .ok { state.ended = true }
            return state.ended
        }
        if head.status == .ok {
            answered()
        } else if ended {
            task.fail(reason: EtcdClient.Failure(reason: "\(endpoint) answered the watch with \(head.status)"))
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        var lines: [[UInt8]] = []
        let ended = state.withLock { state in
            state.heard = true
            guard !state.ended else { return true }
            state.pending.append(contentsOf: buffer.readableBytesView)
            while let newline = state.pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(Array(state.pending[..<newline]))
                state.pending.removeSubrange(...newline)
            }
            // The error etcd ends a stream with has no newline, and async-http-client does not
            // call `didFinishRequest` while the request's body is still open: a whole message left
            // over is taken now.
            if state.pending.last == UInt8(ascii: "}"),
                (try? JSONDecoder().decode(Etcd.WatchMessage.self, from: Data(state.pending))) != nil
            {
                lines.append(state.pending)
                state.pending = []
            }
            return false
        }
        if !ended {
            for line in lines where !take(line, task: task) { break }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    /// The end of the answer: what is left is the last message (the gateway writes no newline
    /// after an error it ends a stream with).
    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        let rest = state.withLock { state in
            defer { state.pending = [] }
            return state.ended ? [] : state.pending
        }
        guard let message = try Self.decode(rest) else { return }
        if let error = message.error {
            throw EtcdClient.Failure(reason: "\(endpoint) ended the watch: \(error.text ?? "an error")")
        }
        switch receive(message) {
        case .more, .end: return
        case .fail(let reason): throw EtcdClient.Failure(reason: reason)
        case .refused(let reason): throw EtcdClient.Failure(reason: reason, refusesWatch: true)
        }
    }

    /// Takes one line of the stream; `false` once the watch has ended.
    private func take(_ line: [UInt8], task: HTTPClient.Task<Void>) -> Bool {
        let verdict: EtcdClient.WatchVerdict
        do {
            guard let message = try Self.decode(line) else { return true }
            if let error = message.error {
                verdict = .fail("\(endpoint) ended the watch: \(error.text ?? "an error")")
            } else {
                verdict = receive(message)
            }
        } catch {
            verdict = .fail("a watch message from \(endpoint) did not decode: \(error)")
        }
        switch verdict {
        case .more:
            return true
        case .end:
            state.withLock { $0.ended = true }
            task.cancel()
        case .fail(let reason):
            state.withLock { $0.ended = true }
            task.fail(reason: EtcdClient.Failure(reason: reason))
        case .refused(let reason):
            state.withLock { $0.ended = true }
            task.fail(reason: EtcdClient.Failure(reason: reason, refusesWatch: true))
        }
        return false
    }

    /// The message in `line`; `nil` for a blank line.
    private static func decode(_ line: [UInt8]) throws -> Etcd.WatchMessage? {
        guard line.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\r") }) else { return nil }
        return try JSONDecoder().decode(Etcd.WatchMessage.self, from: Data(line))
    }
}
