import HTTPDNSCore
import HTTPTypes
import Hummingbird
import NIOCore

/// A complete answer held in memory: what both the router's handlers and the cache-hit paths on the event loop
/// (``HTTP1FrontHandler``, ``HTTP2ServerConnection``) build, so they answer a request with the same bytes.
///
/// Every reply has a content type and a cache policy; they are kept as values rather than as `HTTPFields`, which a
/// cache hit would otherwise build (and the fast paths take apart again) for every request.
struct Reply: Sendable {
    var status: HTTPResponse.Status = .ok
    var contentType: String
    var cacheControl: CacheControl
    /// Fields beyond `Content-Type` and `Cache-Control`, such as `Retry-After`.
    var otherFields: HTTPFields = [:]
    var body: ByteBuffer

    /// `Cache-Control`: how long a client may keep the answer.
    enum CacheControl: Sendable, Equatable {
        case maxAge(UInt32)
        case noStore

        var value: String {
            switch self {
            case .maxAge(let seconds): "max-age=\(seconds)"
            case .noStore: "no-store"
            }
        }
    }

    /// Every field of the reply but `Content-Length`.
    var headers: HTTPFields {
        var fields = otherFields
        fields[.contentType] = contentType
        fields[.cacheControl] = cacheControl.value
        return fields
    }
}

extension Response {
    init(_ reply: Reply) {
        self.init(status: reply.status, headers: reply.headers, body: .init(byteBuffer: reply.body))
    }
}
