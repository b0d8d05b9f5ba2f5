import HTTPDNSCore
import HTTPTypes
import Hummingbird
import NIOCore

/// A complete answer held in memory: what both the router's handlers and the cache-hit path on the event loop
/// (``CacheHitHandler``) build, so the two answer a request with the same bytes.
struct Reply: Sendable {
    var status: HTTPResponse.Status = .ok
    var headers: HTTPFields
    var body: ByteBuffer

    /// A JSON body with the given `Cache-Control` max-age.
    static func json(_ value: JSON, maxAge: UInt32) -> Reply {
        Reply(headers: [.contentType: "application/json", .cacheControl: "max-age=\(maxAge)"], body: ByteBuffer(string: value.text))
    }
}

extension Response {
    init(_ reply: Reply) {
        self.init(status: reply.status, headers: reply.headers, body: .init(byteBuffer: reply.body))
    }
}
