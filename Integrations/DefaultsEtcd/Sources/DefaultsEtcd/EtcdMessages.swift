import Foundation

/// The messages of etcd's v3 JSON gateway (`/v3/kv/range`, `/v3/kv/txn`, `/v3/watch`), as its
/// grpc-gateway writes them: keys and values in base64, 64-bit numbers as strings, and fields at
/// their zero value left out.
enum Etcd {
    /// Base64 of the UTF-8 bytes of `text`.
    static func encode(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    /// Base64 of `bytes`.
    static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// The text `base64` holds, if it is base64 of UTF-8.
    static func decode(_ base64: String?) -> String? {
        guard let base64, let data = Data(base64Encoded: base64) else { return base64 == nil ? "" : nil }
        return String(bytes: data, encoding: .utf8)
    }

    /// The end of the range of every key that starts with `prefix`: the prefix with its last byte
    /// that can grow grown by one, and what follows it dropped.
    static func rangeEnd(of prefix: String) -> [UInt8] {
        var bytes = Array(prefix.utf8)
        while let last = bytes.last {
            if last < 0xff {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        // "\0" as the end means every key from the start onwards.
        return [0]
    }

    struct Header: Decodable {
        var revision: String?
        /// The cluster's id: another one at the same address is another cluster (a restore from a
        /// snapshot makes a new one).
        var cluster_id: String?

        var revisionNumber: Int64 { revision.flatMap(Int64.init) ?? 0 }
    }

    struct KeyValue: Decodable {
        var key: String
        var value: String?
        var mod_revision: String?
        var version: String?
    }

    struct RangeRequest: Encodable {
        var key: String
        var range_end: String?
        /// The revision to read at (an older one reads history not compacted yet); absent: now.
        var revision: String?
        var keys_only: Bool?
        var serializable: Bool?
    }

    struct RangeResponse: Decodable {
        var header: Header
        var kvs: [KeyValue]?
    }

    struct PutRequest: Encodable {
        var key: String
        var value: String
    }

    struct DeleteRangeRequest: Encodable {
        var key: String
        var range_end: String?
    }

    struct Compare: Encodable {
        var key: String
        var range_end: String?
        /// `MOD`, `CREATE`, `VERSION` or `VALUE`.
        var target: String
        /// `EQUAL`, `LESS`, `GREATER` or `NOT_EQUAL`.
        var result: String
        var mod_revision: String?
        var version: String?
    }

    struct RequestOp: Encodable {
        var request_put: PutRequest?
        var request_delete_range: DeleteRangeRequest?
        var request_range: RangeRequest?
    }

    struct TxnRequest: Encodable {
        var compare: [Compare]
        var success: [RequestOp]
        var failure: [RequestOp]
    }

    struct DeleteRangeResponse: Decodable {
        /// How many keys it removed, as a string; absent when none.
        var deleted: String?
    }

    struct ResponseOp: Decodable {
        var response_range: RangeResponse?
        var response_delete_range: DeleteRangeResponse?
    }

    struct TxnResponse: Decodable {
        var header: Header
        var succeeded: Bool?
        var responses: [ResponseOp]?
    }

    struct WatchCreateRequest: Encodable {
        struct Body: Encodable {
            var key: String
            var range_end: String
            var start_revision: String
            /// Whether etcd sends a header-only message now and then (every 10 minutes unless its
            /// `--experimental-watch-progress-notify-interval` says otherwise): a point the watch
            /// has passed, to resume from.
            var progress_notify: Bool?
        }

        var create_request: Body
    }

    /// `{"progress_request":{}}`: asks etcd for a header-only answer at once, on a watch's stream.
    struct WatchProgressRequest: Encodable {
        struct Body: Encodable {}

        var progress_request = Body()
    }

    struct Event: Decodable {
        /// Absent for a put; `DELETE` for a removal.
        var type: String?
        var kv: KeyValue
    }

    struct WatchResponse: Decodable {
        var header: Header
        /// The watch's id on its stream; "-1" on the answer to a progress request (the first
        /// watch's id, 0, is left out).
        var watch_id: String?
        var created: Bool?
        var canceled: Bool?
        var compact_revision: String?
        var cancel_reason: String?
        var events: [Event]?
    }

    /// `/v3/auth/authenticate`'s request: a user and password, for a token.
    struct AuthenticateRequest: Encodable {
        var name: String
        var password: String
    }

    struct AuthenticateResponse: Decodable {
        var token: String?
    }

    struct ErrorBody: Decodable {
        var message: String?
        var error: String?
        /// gRPC's status code (14: unavailable, 16: unauthenticated…).
        var code: Int?
        var grpc_code: Int?
        var http_code: Int?

        /// What etcd said.
        var text: String? { message ?? error }
    }

    /// One line of the watch stream.
    struct WatchMessage: Decodable {
        var result: WatchResponse?
        var error: ErrorBody?
    }
}
