import HTTPTypes
import NIOCore

/// A complete answer held in memory: what both the router's handlers and the cache-hit paths on the event loop
/// (``HTTP1FrontHandler``, ``HTTP2ServerConnection``) build, so they answer a request with the same bytes.
///
/// Every reply has a content type and a cache policy; they are kept as values rather than as `HTTPFields`, which a
/// cache hit would otherwise build (and the fast paths take apart again) for every request.
public struct Reply: Sendable {
    public var status: HTTPResponse.Status
    public var contentType: String
    public var cacheControl: CacheControl
    /// Fields beyond `Content-Type` and `Cache-Control`, such as `Retry-After`.
    public var otherFields: HTTPFields
    public var body: ByteBuffer

    public init(
        status: HTTPResponse.Status = .ok,
        contentType: String,
        cacheControl: CacheControl,
        otherFields: HTTPFields = [:],
        body: ByteBuffer
    ) {
        self.status = status
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.otherFields = otherFields
        self.body = body
    }

    /// `Cache-Control`: how long a client may keep the answer.
    public enum CacheControl: Sendable, Equatable {
        case maxAge(UInt32)
        case noStore

        public var value: String {
            switch self {
            case .maxAge(let seconds): "max-age=\(seconds)"
            case .noStore: "no-store"
            }
        }
    }

    /// Every field of the reply but `Content-Length`.
    public var headers: HTTPFields {
        var fields = otherFields
        fields[.contentType] = contentType
        fields[.cacheControl] = cacheControl.value
        return fields
    }
}
