import HTTPTypes
import NIOHTTP1

/// A response's head as the encoders write it, whoever made the response: a ``Reply`` answered on the event loop,
/// or a response from the router. Each protocol has one encoder that writes it (``HTTP1ResponseHeadWriter``,
/// ``HPACKResponseEncoder``), and each encoder adds the `Date` field itself, from ``HTTPDate``: a `date` among
/// ``fields`` is never written.
struct ResponseHead {
    /// Fields as whoever made the response holds them: the router's HTTP/2 responses in HTTP types, its HTTP/1.1
    /// responses in NIO's.
    enum Fields {
        case typed(HTTPFields)
        case nio(HTTPHeaders)

        /// Calls `body` with each field's name and value, in order: names as they were given for HTTP/1.1, lower
        /// case (`canonical`) for HTTP/2, where a field name is only ever lower case.
        func forEach(canonical: Bool, _ body: (_ name: String, _ value: String) -> Void) {
            switch self {
            case .typed(let fields):
                for field in fields { body(canonical ? field.name.canonicalName : field.name.rawName, field.value) }
            case .nio(let headers):
                for (name, value) in headers { body(canonical ? name.lowercased() : name, value) }
            }
        }
    }

    var status: HTTPResponse.Status
    /// A reply's content type and cache policy, kept as values; a router's response has them among its fields.
    var contentType: String?
    var cacheControl: Reply.CacheControl?
    var fields: Fields
    /// A reply's body length; a router's response says its own among its fields, if it knows it.
    var contentLength: Int?

    init(_ reply: Reply) {
        status = reply.status
        contentType = reply.contentType
        cacheControl = reply.cacheControl
        fields = .typed(reply.otherFields)
        contentLength = reply.body.readableBytes
    }

    init(status: HTTPResponse.Status, fields: Fields) {
        self.status = status
        self.fields = fields
    }

    /// Whether a field of this name is written in a head: never `date`, which the encoder makes.
    @inline(__always)
    static func isWritten(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard utf8.count == 4 else { return true }
        // ASCII letters compared without case: OR-ing 0x20 lower-cases them.
        return !utf8.elementsEqual("date".utf8, by: { $0 | 0x20 == $1 })
    }
}
