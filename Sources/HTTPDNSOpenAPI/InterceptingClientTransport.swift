#if OpenAPI
import AsyncHTTPClient
import FoundationEssentials
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSNetworking
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

/// A swift-openapi-runtime `ClientTransport` that sends each operation of a generated `Client` through an
/// `InterceptingHTTPClient`: the host resolved by HTTPDNS, the request sent to the answer's addresses, the real name
/// kept in the Host header, TLS SNI and the certificate check.
///
/// ```swift
/// let transport = try InterceptingClientTransport(interceptor)
/// let client = Client(serverURL: serverURL, transport: transport)
/// ```
///
/// **Request bodies.** The interceptor sends a body again when it has to: to the next address after a connection
/// failure, once more on a new HTTP/2 stream when the server refused an idempotent request's stream (its GOAWAY),
/// and after a 307 or 308 redirect. So the transport reads a body of up to
/// ``Configuration-swift.struct/maxBufferedRequestBodyBytes`` (1 MiB by default) into memory before it sends it, and
/// the interceptor can send it again whole. A longer body, or one of unknown length that goes past the bound, is
/// streamed as it is read, once: it still goes to the next address when connecting to one failed before any of it
/// was read, but it is not sent again after that (a 307 or 308 is then the response, and a refused stream an
/// error).
///
/// **Response bodies** stream: each read within the interceptor's `readTimeout`; nothing is buffered.
///
/// **Errors** are the interceptor's `InterceptorError`, which the generated client hands back as a `ClientError`
/// whose `underlyingError` it is: branch on its `code`.
///
/// **Lifecycle.** The transport does not own the interceptor: shut the interceptor down (or leave its scope) after
/// the last operation, as with any `InterceptingHTTPClient`.
public struct InterceptingClientTransport: ClientTransport {
    /// How the transport sends each operation.
    public struct Configuration: Sendable {
        /// How long an operation may take until its response head arrives: resolution, connecting, redirects and the
        /// request body included (the response body then streams, each read within the interceptor's
        /// `readTimeout`). Default 60 s, as swift-openapi-async-http-client's.
        public var timeout: Duration = .seconds(60)
        /// The largest request body read into memory before it is sent, so that the interceptor can send it again;
        /// a longer body is streamed once. 0 streams every body. Default 1 MiB.
        public var maxBufferedRequestBodyBytes = 1 << 20

        public init() {}

        /// - Throws: `ConfigurationError` for a timeout that is not positive or a negative bound.
        public func validate() throws(ConfigurationError) {
            guard timeout > .zero else {
                throw ConfigurationError(.outOfRange, key: "timeout", reason: "must be positive, not \(timeout)")
            }
            guard maxBufferedRequestBodyBytes >= 0 else {
                throw ConfigurationError(
                    .outOfRange, key: "maxBufferedRequestBodyBytes", reason: "must be 0 or more bytes, not \(maxBufferedRequestBodyBytes)"
                )
            }
        }
    }

    /// The interceptor every operation goes through; the caller's to shut down.
    public let client: InterceptingHTTPClient
    /// The timeout and the request body bound.
    public let configuration: Configuration
    private let logger: Logger?

    /// - Parameters:
    ///   - client: the interceptor to send through; not owned by the transport.
    ///   - configuration: the timeout and the request body bound.
    ///   - logger: for the operations, with each one's ID as the metadata `openapi.operation`; default the
    ///     interceptor's own.
    /// - Throws: `ConfigurationError` for a configuration ``Configuration-swift.struct/validate()`` refuses.
    public init(_ client: InterceptingHTTPClient, configuration: Configuration = Configuration(), logger: Logger? = nil) throws(ConfigurationError) {
        try configuration.validate()
        self.client = client
        self.configuration = configuration
        self.logger = logger
    }

    /// Sends `request` with `body` to `baseURL` joined with the request's path, through the interceptor.
    /// - Throws: `InterceptorError`: `invalidRequest` for a URL that cannot be made from `baseURL` and the path,
    ///   `transportFailed` (or `cancelled`) when reading the request body failed, and whatever the interceptor throws.
    public func send(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let url = try Self.url(of: request, baseURL: baseURL)
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count)
        for field in request.headerFields where field.name != .contentLength && field.name != .transferEncoding {
            // The body decides the framing; the interceptor writes Host from the URL.
            headers.add(name: field.name.rawName, value: field.value)
        }
        var logger = self.logger
        logger?[metadataKey: "openapi.operation"] = "\(operationID)"
        // One timeout for all of it: reading a body into memory takes from what the interceptor then has.
        let clock = ContinuousClock()
        let start = clock.now
        let prepared = try await Self.prepare(body, bufferingUpTo: configuration.maxBufferedRequestBodyBytes, url: url, within: configuration.timeout)
        let timeout = configuration.timeout - (clock.now - start)
        guard timeout > .zero else {
            throw InterceptorError(.timeout, "the request body for \(url) was not read within \(configuration.timeout)")
        }
        let answer: InterceptingHTTPClient.Response
        switch prepared {
        case .buffered(let bytes):
            answer = try await client.execute(
                method: request.method.rawValue, url: url, headers: headers, body: bytes, timeout: timeout, logger: logger
            )
        case .streamed(let streamed):
            var sent = HTTPClientRequest(url: url)
            sent.method = HTTPMethod(rawValue: request.method.rawValue)
            sent.headers = headers
            sent.body = streamed
            answer = try await client.execute(sent, timeout: timeout, logger: logger)
        }
        return Self.response(answer.response, method: request.method, decoded: client.configuration.decompression)
    }

    /// ``RequestBody/prepare(_:bufferingUpTo:url:)`` within `timeout`: a body read from a producer that stalls fails
    /// the operation as a `timeout`, as a response that never comes does.
    private static func prepare(_ body: HTTPBody?, bufferingUpTo limit: Int, url: String, within timeout: Duration) async throws(InterceptorError) -> RequestBody {
        guard let body else { return .buffered(nil) }
        let prepared: RequestBody?
        do {
            prepared = try await withDeadline(.now() + .nanoseconds(timeout.clampedNanoseconds)) {
                try await RequestBody.prepare(body, bufferingUpTo: limit, url: url)
            }
        } catch let error as InterceptorError {
            throw error
        } catch {
            throw InterceptorError(Task.isCancelled ? .cancelled : .transportFailed, "the request body for \(url) could not be read: \(error)", cause: error)
        }
        guard let prepared else { throw InterceptorError(.timeout, "the request body for \(url) was not read within \(timeout)") }
        return prepared
    }

    /// `baseURL` with the request's path appended and its query, as swift-openapi-async-http-client joins them.
    static func url(of request: HTTPRequest, baseURL: URL) throws(InterceptorError) -> String {
        let base = baseURL.absoluteString
        let path = request.path ?? ""
        // The common case, without parsing either into components and printing them again (a large part of the
        // transport's own work per operation; PERFORMANCE.md): the same string, by `joinedByComponents`'s rules.
        if let joined = plainlyJoined(base, path) { return joined }
        return try joinedByComponents(base, path)
    }

    /// `base` followed by `path`, when joining them by `URLComponents` would give exactly that:
    /// - the base is `scheme://authority[/path]` with a host, no query or fragment, and a port (if any) of one to five
    ///   digits not starting with 0 (`URLComponents` prints the port as a number: `:0443` would become `:443`);
    /// - `path` begins with one `/` (`//host/…` would be read as an authority);
    /// - both hold only characters a URL may hold as they are (RFC 3986's unreserved characters, sub-delimiters, `:`,
    ///   `@`, `/`, and `%` followed by two hex digits), the path `?` too.
    ///
    /// Nil for anything else, which `joinedByComponents` then joins (or refuses).
    static func plainlyJoined(_ base: String, _ path: String) -> String? {
        var bytes = path.utf8.makeIterator()
        guard bytes.next() == UInt8(ascii: "/"), bytes.next() != UInt8(ascii: "/") else { return nil }
        guard hasPlainAuthority(base.utf8), isPlain(base.utf8, allowingQuery: false), isPlain(path.utf8, allowingQuery: true) else {
            return nil
        }
        return base + path
    }

    /// Whether `base` begins with a scheme, `://` and an authority whose host is not empty and whose port, if it has
    /// one, is printed by `URLComponents` as written.
    private static func hasPlainAuthority(_ base: String.UTF8View) -> Bool {
        guard let colon = base.firstIndex(of: UInt8(ascii: ":")), CanonicalRequest.isScheme(base[..<colon]), base[colon...].starts(with: "://".utf8)
        else { return false }
        let authority = base[base.index(colon, offsetBy: 3)...].prefix { $0 != UInt8(ascii: "/") }
        // The host and port follow the user information, if any; an `@` within it (`a@b@host`) would be encoded.
        let at = authority.lastIndex(of: UInt8(ascii: "@"))
        guard authority.firstIndex(of: UInt8(ascii: "@")) == at else { return false }
        let hostAndPort = at.map { authority[authority.index(after: $0)...] } ?? authority
        guard let portColon = hostAndPort.firstIndex(of: UInt8(ascii: ":")) else { return !hostAndPort.isEmpty }
        let port = hostAndPort[hostAndPort.index(after: portColon)...]
        return portColon > hostAndPort.startIndex && (1...5).contains(port.count) && port.first != UInt8(ascii: "0")
            && port.allSatisfy(CanonicalRequest.isDigit)
    }

    private static func isPlain(_ bytes: String.UTF8View, allowingQuery: Bool) -> Bool {
        var pendingHexDigits = 0
        for byte in bytes {
            if pendingHexDigits > 0 {
                guard CanonicalRequest.hexValue(byte) != nil else { return false }
                pendingHexDigits -= 1
                continue
            }
            if CanonicalRequest.isUnreserved(byte) { continue }
            switch byte {
            case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
                UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="),
                UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"):
                continue
            case UInt8(ascii: "%"):
                pendingHexDigits = 2
            case UInt8(ascii: "?") where allowingQuery:
                continue
            default:
                return false
            }
        }
        return pendingHexDigits == 0
    }

    /// `base` and `path` joined as swift-openapi-async-http-client joins them: the base's components, the path's
    /// path appended to its path, and the path's query as the query.
    static func joinedByComponents(_ base: String, _ pathText: String) throws(InterceptorError) -> String {
        guard var components = URLComponents(string: base), let path = URLComponents(string: pathText) else {
            throw InterceptorError(.invalidRequest, "no URL can be made of the server URL \(base) and the path '\(pathText)'")
        }
        components.percentEncodedPath += path.percentEncodedPath
        components.percentEncodedQuery = path.percentEncodedQuery
        guard let url = components.string else {
            throw InterceptorError(.invalidRequest, "no URL can be made of the server URL \(base) and the path '\(pathText)'")
        }
        return url
    }

    /// The interceptor's response as OpenAPI's: every field in order (repeated ones too), and the body streaming.
    static func response(_ response: HTTPClientResponse, method: HTTPRequest.Method, decoded: Bool) -> (HTTPResponse, HTTPBody?) {
        var fields = HTTPFields()
        fields.reserveCapacity(response.headers.count)
        for header in response.headers {
            // AsyncHTTPClient has checked each name as a token; one that is not a field name is dropped.
            guard let name = HTTPField.Name(header.name) else { continue }
            fields.append(HTTPField(name: name, value: header.value))
        }
        let head = HTTPResponse(status: .init(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase), headerFields: fields)
        switch method {
        case .head, .connect, .trace:
            return (head, nil)
        default:
            // A decoded body's length is not the Content-Length of the encoded one.
            let length: HTTPBody.Length =
                if !decoded, let field = fields[.contentLength], let count = Int64(field) { .known(count) } else { .unknown }
            let body = HTTPBody(response.body.map { HTTPBody.ByteChunk($0.readableBytesView) }, length: length, iterationBehavior: .single)
            return (head, body)
        }
    }
}

/// A request body as the interceptor takes it: in memory (sent again when needed), or streamed once.
enum RequestBody: Sendable {
    case buffered(ByteBuffer?)
    case streamed(HTTPClientRequest.Body)

    /// Reads `body` into memory when it fits in `limit` bytes; else streams it, the part already read first.
    static func prepare(_ body: HTTPBody?, bufferingUpTo limit: Int, url: String) async throws(InterceptorError) -> RequestBody {
        guard let body else { return .buffered(nil) }
        let length: HTTPClientRequest.Body.Length
        switch body.length {
        case .known(let count) where count > Int64(limit):
            return .streamed(.stream(OnceReadBody(body), length: .known(count)))
        case .known(let count):
            length = .known(count)
        case .unknown:
            length = .unknown
        }
        var buffer = ByteBuffer()
        var iterator = body.makeAsyncIterator()
        do {
            while let chunk = try await iterator.next() {
                guard buffer.readableBytes + chunk.count <= limit else {
                    // Past the bound: what was read goes first, then the rest as it comes.
                    buffer.writeBytes(chunk)
                    return .streamed(.stream(OnceReadBody(read: buffer, rest: iterator), length: length))
                }
                buffer.writeBytes(chunk)
            }
        } catch {
            if Task.isCancelled || error is CancellationError {
                throw InterceptorError(.cancelled, "reading the request body for \(url) was cancelled", cause: error)
            }
            throw InterceptorError(.transportFailed, "the request body for \(url) could not be read: \(error)", cause: error)
        }
        // A body cut short by cancellation may end as if it were whole: never send it as complete.
        if Task.isCancelled { throw InterceptorError(.cancelled, "reading the request body for \(url) was cancelled") }
        if case .known(let count) = body.length, count != Int64(buffer.readableBytes) {
            throw InterceptorError(.invalidRequest, "the request body for \(url) declared \(count) bytes but held \(buffer.readableBytes)")
        }
        return .buffered(buffer)
    }
}

/// An OpenAPI body streamed to AsyncHTTPClient once: what was read already, then the rest of the body's own
/// iteration. Every iterator made of it continues the one iteration, so that a body the interceptor sends to the
/// next address after a connection failure (AsyncHTTPClient reads none of it before it is connected) is still whole.
///
/// Unchecked `Sendable`: AsyncHTTPClient reads a request body from one task, one piece after another, and the
/// interceptor never sends a streamed body twice at once; the state is touched by that reader only.
final class OnceReadBody: AsyncSequence, @unchecked Sendable {
    typealias Element = ByteBuffer

    private var read: ByteBuffer?
    private var body: HTTPBody?
    private var rest: HTTPBody.Iterator?

    /// A body none of which was read.
    init(_ body: HTTPBody) {
        self.body = body
    }

    /// A body whose first bytes, `read`, were read through `rest`.
    init(read: ByteBuffer, rest: HTTPBody.Iterator) {
        self.read = read
        self.rest = rest
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: OnceReadBody

        mutating func next() async throws -> ByteBuffer? {
            try await body.next()
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(body: self)
    }

    private func next() async throws -> ByteBuffer? {
        if let read {
            self.read = nil
            return read
        }
        if let body {
            rest = body.makeAsyncIterator()
            self.body = nil
        }
        guard var iterator = rest else { return nil }
        rest = nil
        guard let chunk = try await iterator.next() else { return nil }
        rest = iterator
        return ByteBuffer(bytes: chunk)
    }
}
#endif
