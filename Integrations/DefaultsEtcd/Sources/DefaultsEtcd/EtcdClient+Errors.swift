import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// What a failed call means: whether it reached a member, and why etcd refused it, said plainly.
extension EtcdClient {
    /// Whether `error` came before the request could reach a member: the connection was refused
    /// or could not be made.
    static func wasNeverSent(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError {
            return error == .connectTimeout
        }
        if let error = error as? IOError {
            return [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL].contains(error.errnoCode)
        }
        if error is NIOConnectionError { return true }
        // The handshake comes before any byte of the request. (Not every error of NIOSSL's: its
        // unclean shutdown is a connection cut, maybe after the request went out.)
        if case NIOSSLError.handshakeFailed = error { return true }
        if case ChannelError.connectTimeout = error { return true }
        return false
    }

    /// Why etcd refused a request, said as what it is.
    static func refusal(of path: String, status: HTTPResponseStatus, _ message: String) -> String {
        // The NOSPACE alarm: every write fails until an operator acts; nothing the suite can
        // do by trying again sooner.
        if message.contains("database space exceeded") {
            return
                "etcd's database is full (its NOSPACE alarm is raised: \(message)); no write is stored until an operator frees space (etcdctl compact, etcdctl defrag, etcdctl alarm disarm)"
        }
        return "etcd refused \(path): \(message)"
    }

    /// Whether etcd's error says the member has no leader: said before a request is proposed, so
    /// nothing was applied.
    static func saysNoLeader(_ message: String?) -> Bool {
        message?.contains("no leader") == true
    }
}
