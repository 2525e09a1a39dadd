import Defaults
import Foundation
import NIOHTTP1
import Synchronization

/// Logging in to a cluster with authentication on: a token for the requests, a new one when etcd
/// no longer takes it, and a refused password remembered so it is not offered again in a loop.
extension EtcdClient {
    /// The token to send: the one held, or a new one when there is none or `fresh` asks for one;
    /// `nil` without credentials, and "" when etcd has authentication off.
    ///
    /// - Parameter start: The endpoint to ask first, if not the one that answered last.
    /// - Throws: ``Failure`` when the password cannot be read, etcd refuses it (now, or less
    ///   than a minute ago and the password is the same), or etcd is out of reach.
    func token(fresh: Bool, startingAt start: Int? = nil) throws(Failure) -> String? {
        guard let credentials else { return nil }
        if !fresh, let token = session.withLock({ $0.token }) { return token }
        let password = try credentials.readPassword()
        // A password refused is not offered again until it changes (or a minute has passed:
        // an operator may have set the user's password to it meanwhile). Each try is a bcrypt
        // check and a proposal in etcd's log.
        try session.withLock { session throws(Failure) in
            guard let refused = session.refused, refused.password == password,
                refused.at.duration(to: .now) < Self.refusalLasts
            else { return }
            throw Failure(reason: refused.reason, refusesCredentials: true, isNews: !refused.isReported)
        }
        let request = Etcd.AuthenticateRequest(name: credentials.user, password: password)
        let payload: Data
        do {
            payload = try JSONEncoder().encode(request)
        } catch {
            throw Failure(reason: "could not encode a request to log in: \(error)")
        }
        session.withLock { $0.logins += 1 }
        let answer: Answer
        do {
            answer = try post(
                "v3/auth/authenticate",
                payload,
                token: nil,
                backend: "",
                isIdempotent: true,
                startingAt: start
            )
        } catch {
            throw Failure(reason: error.shortReason)
        }
        switch answer {
        case .ok(let bytes):
            guard let token = (try? JSONDecoder().decode(Etcd.AuthenticateResponse.self, from: bytes))?.token else {
                throw Failure(reason: "etcd's answer to logging in as \(credentials) held no token")
            }
            session.withLock { session in
                session.token = token
                session.refused = nil
            }
            return token
        case .refused(_, let message) where message.contains("authentication is not enabled"):
            // Nothing to log in to: requests go without a token until etcd asks for one.
            session.withLock { $0.token = "" }
            return ""
        case .refused(_, let message) where message.contains("authentication failed"):
            let reason = "etcd refused the password of \(credentials) (\(message))"
            let isNews = session.withLock { session in
                // The same password refused again, a minute later: reported then, not again.
                let wasReported = session.refused.map { $0.password == password && $0.isReported } ?? false
                session.token = nil
                session.refused = Refused(password: password, reason: reason, at: .now, isReported: wasReported)
                return !wasReported
            }
            throw Failure(reason: reason, refusesCredentials: true, isNews: isNews)
        case .refused(let status, let message):
            if message.contains("CommonName of client") {
                throw Failure(reason: refusal(of: "", status: status, message, backend: "", isWrite: false).shortReason)
            }
            throw Failure(reason: "logging in to etcd as \(credentials) failed: \(message) (\(status))")
        case .unknown(let reason):
            throw Failure(reason: reason)
        }
    }

    /// Counts the refusal of the password as reported.
    func markRefusalReported() {
        session.withLock { $0.refused?.isReported = true }
    }

    /// Whether the caller is the one to report the refusal of the password: `true` once per
    /// refused password, to whoever asks first (a call the store reports counts).
    func claimRefusalReport() -> Bool {
        session.withLock { session in
            guard let refused = session.refused, !refused.isReported else { return false }
            session.refused?.isReported = true
            return true
        }
    }

    /// The refusal of the password, if etcd refused it and nobody reported it yet.
    func unreportedRefusal() -> Failure? {
        session.withLock { session in
            guard let refused = session.refused, !refused.isReported else { return nil }
            return Failure(reason: refused.reason, refusesCredentials: true, isNews: true)
        }
    }

    /// Forgets `token`, which etcd no longer takes, unless another already replaced it.
    func forget(_ token: String?) {
        session.withLock { session in
            if session.token == token { session.token = nil }
        }
    }

    /// How long a password etcd refused is not offered again, unless it changes.
    static let refusalLasts = Duration.seconds(60)

    /// Whether etcd refused a request for want of a valid token: it expired, the member that gave
    /// it restarted, authentication was turned on since, or the users and roles changed since it
    /// was given.
    static func asksToLogIn(_ status: HTTPResponseStatus, _ message: String) -> Bool {
        status == .unauthorized || message.contains("invalid auth token") || message.contains("user name is empty")
            || message.contains("revision of auth store is old")
    }

    /// A password etcd refused.
    struct Refused {
        let password: String
        let reason: String
        let at: ContinuousClock.Instant
        /// Whether someone reported it.
        var isReported: Bool
    }

    /// What the client holds of its login.
    struct Session {
        /// The token requests carry; `nil` until logged in, "" with authentication off.
        var token: String?
        var refused: Refused?
        /// How many times the client asked etcd for a token.
        var logins = 0
    }

    /// How many times the client asked etcd for a token, for tests.
    var loginsForTesting: Int { session.withLock { $0.logins } }
    /// The token requests carry now, for tests.
    var tokenForTesting: String? { session.withLock { $0.token } }
}
