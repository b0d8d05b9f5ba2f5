import AsyncHTTPClient
import Foundation
import FoundationNetworking
import HTTPDNSInterceptor
import HTTPDNSSynchronization
import NIOCore
import NIOHTTP1
import NIOPosix

/// The URLSession adapter: a FoundationNetworking `URLProtocol` that forwards the http and https requests it takes
/// through an `InterceptingHTTPClient`, never through URLSession itself (which cannot check a certificate for the
/// original name once the URL holds an address).
///
/// ```swift
/// let configuration = URLSessionConfiguration.default
/// HTTPDNSURLProtocol.install(interceptor, into: configuration)
/// let session = URLSession(configuration: configuration)
/// let (data, response) = try await session.data(from: url)
/// ```
///
/// What it does for URLSession, which does not do it for a custom protocol on Linux:
/// - **Redirects** are followed inside the interceptor (URLSession's `wasRedirectedTo` ends in `fatalError`). The
///   response's URL is the last hop's.
/// - **Cookies**: `Set-Cookie` of the final response is stored into the configuration's cookie storage, and a
///   request without a `Cookie` field gets the stored ones, when `httpShouldSetCookies` and the request's
///   `httpShouldHandleCookies` allow.
/// - **The cache storage policy** is handed to URLSession, and a response it allows (up to 1 MiB) is stored into the
///   configuration's `urlCache` by the adapter itself.
///
/// Bodies: URLSession keeps only the last piece a protocol loads for completion-handler and `data(for:)` tasks, so
/// this class hands the whole body over at the end. For sessions with a data delegate that wants pieces as they
/// arrive, install ``HTTPDNSStreamingURLProtocol`` (`streaming: true`) instead.
///
/// Not possible: upload tasks' bodies (`uploadTask(with:from:)`), which URLSession keeps from protocols — put the
/// body in the request's `httpBody` or `httpBodyStream` instead; and the cookies set by intermediate redirects.
///
/// Not `Sendable` (URLProtocol is explicitly not): its one piece of mutable state, the loading task, is behind a
/// Mutex, and `request` and `client` are set by URLSession before `startLoading` and not changed after, which is what
/// lets `ProtocolBox` carry it into the loading task.
open class HTTPDNSURLProtocol: URLProtocol {
    /// What the installed protocol forwards through, and the configuration's stores.
    struct Installation: @unchecked Sendable {
        let client: InterceptingHTTPClient
        // HTTPCookieStorage and URLCache are thread-safe classes FoundationNetworking does not mark Sendable.
        let cookies: HTTPCookieStorage?
        let setsCookies: Bool
        let cache: URLCache?
        let timeout: Duration
        /// The configuration's `httpAdditionalHeaders`, which FoundationNetworking adds in its own transport only.
        let additionalHeaders: [(String, String)]

        /// Whether `other` forwards through the same client into the same stores.
        func isSame(as other: Installation) -> Bool {
            client === other.client && cookies === other.cookies && cache === other.cache && setsCookies == other.setsCookies
                && timeout == other.timeout && Self.fields(additionalHeaders) == Self.fields(other.additionalHeaders)
        }

        /// Fields compared without regard to the names' case or their order.
        private static func fields(_ headers: [(String, String)]) -> [String: String] {
            Dictionary(headers.map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { first, _ in first })
        }
    }

    private static let installation = Mutex<Installation?>(nil)
    /// The property that marks a request as handled (the reference's recursion marker): a request carrying it is
    /// left to URLSession. The adapter itself never hands a request back to URLSession, so this is for layers
    /// above it. Not a header: a header could come from outside the process and steer a request around HTTPDNS.
    public static let handledProperty = "HTTPDNSHandled"
    /// The most of a body kept to store into the URL cache.
    static let maxCachedBodyBytes = 1 << 20

    /// Puts the protocol first in `configuration.protocolClasses` (`URLProtocol.registerClass` does not take http
    /// and https on Linux), forwarding through `client` into the configuration's cookie storage and URL cache.
    ///
    /// The protocol class is global, so one installation serves the process: installing again with the same client
    /// and stores is fine (another session may share them), while different ones are refused rather than mixed
    /// (one session's cookies must not reach another's requests). ``uninstall()`` first to change them.
    /// - Parameters:
    ///   - client: the interceptor requests are forwarded through.
    ///   - configuration: the session configuration to install into; its cookie storage and URL cache are used.
    ///   - streaming: hand the body over in pieces as it arrives, for sessions with a data delegate.
    /// - Throws: ``HTTPDNSURLProtocolError`` when another client or other stores are installed.
    public static func install(_ client: InterceptingHTTPClient, into configuration: URLSessionConfiguration, streaming: Bool = false) throws {
        let seconds = configuration.timeoutIntervalForRequest > 0 ? min(configuration.timeoutIntervalForRequest, 86_400) : 60
        let additional = (configuration.httpAdditionalHeaders ?? [:]).compactMap { name, value in
            (name as? String).map { ($0, "\(value)") }
        }
        let wanted = Installation(
            client: client,
            cookies: configuration.httpCookieStorage,
            setsCookies: configuration.httpShouldSetCookies,
            cache: configuration.urlCache,
            timeout: .milliseconds(Int64(seconds * 1000)),
            additionalHeaders: additional
        )
        try installation.withLock { current in
            if let current, !current.isSame(as: wanted) {
                throw HTTPDNSURLProtocolError(
                    .alreadyInstalled,
                    "HTTPDNSURLProtocol is already installed with another client or other cookie and cache stores; uninstall() it first"
                )
            }
            current = wanted
        }
        let protocolClass: AnyClass = streaming ? HTTPDNSStreamingURLProtocol.self : HTTPDNSURLProtocol.self
        configuration.protocolClasses = [protocolClass] + (configuration.protocolClasses ?? []).filter { $0 != protocolClass }
    }

    /// Removes the installation: from now on the protocol takes no request, and ``install(_:into:streaming:)`` may
    /// install another client and stores.
    public static func uninstall() {
        installation.withLock { $0 = nil }
    }

    /// Whether pieces are handed over as they arrive.
    open class var streamsBody: Bool { false }

    private let loading = Mutex<Task<Void, Never>?>(nil)

    override open class func canInit(with request: URLRequest) -> Bool {
        guard let installation = installation.withLock({ $0 }), let url = request.url,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            property(forKey: handledProperty, in: request) == nil
        else { return false }
        guard let canonical = try? CanonicalRequest.normalize(method: request.httpMethod ?? "GET", url: url.absoluteString) else {
            // A URL the pipeline cannot send: taken, so that the error says why, rather than sent around it.
            return true
        }
        switch installation.client.decide(canonical) {
        case .take, .refuse: return true  // A refused host is taken, so that its error says why.
        case .pass: return false
        }
    }

    override open class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override open func startLoading() {
        guard let installation = Self.installation.withLock({ $0 }) else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        let box = ProtocolBox(self)
        let request = self.request
        // Never block the session's queue: the exchange runs in a task of its own.
        loading.withLock { $0 = Task { await box.value.load(request, installation) } }
    }

    override open func stopLoading() {
        loading.withLock { $0?.cancel() }
    }

    private func load(_ request: URLRequest, _ installation: Installation) async {
        guard let url = request.url else { return }
        var headers = HTTPHeaders()
        for (name, value) in request.allHTTPHeaderFields ?? [:] { headers.add(name: name, value: value) }
        // The session's own fields, where the request has none of that name (as URLSession does).
        for (name, value) in installation.additionalHeaders where !headers.contains(name: name) { headers.add(name: name, value: value) }
        if installation.setsCookies, request.httpShouldHandleCookies, headers["cookie"].isEmpty,
            let cookies = installation.cookies?.cookies(for: url), !cookies.isEmpty
        {
            for (name, value) in HTTPCookie.requestHeaderFields(with: cookies) { headers.add(name: name, value: value) }
        }
        let method = request.httpMethod ?? "GET"
        // The request's own interval when it is not URLRequest's default (60 s), else the configuration's; at most a
        // day, so the conversion cannot overflow.
        let interval = request.timeoutInterval > 0 && request.timeoutInterval != 60 ? request.timeoutInterval : nil
        let timeout = interval.map { Duration.milliseconds(Int64(min($0, 86_400) * 1000)) } ?? installation.timeout
        let response: InterceptingHTTPClient.Response
        do {
            if let stream = request.httpBodyStream {
                var forwarded = HTTPClientRequest(url: url.absoluteString)
                forwarded.method = HTTPMethod(rawValue: method)
                forwarded.headers = headers
                let length = headers.first(name: "content-length").flatMap(Int64.init)
                forwarded.body = .stream(InputStreamBytes(stream), length: length.map { .known($0) } ?? .unknown)
                response = try await installation.client.execute(forwarded, timeout: timeout)
            } else {
                response = try await installation.client.execute(
                    method: method, url: url.absoluteString, headers: headers, body: request.httpBody.map { ByteBuffer(bytes: $0) }, timeout: timeout
                )
            }
        } catch {
            client?.urlProtocol(self, didFailWithError: Self.urlError(error, url: url))
            return
        }
        let finalURL = URL(string: response.request.url) ?? url
        var fields: [String: String] = [:]
        for header in response.response.headers {
            // On a 401, FoundationNetworking answers a WWW-Authenticate challenge itself: it traps on one without a
            // realm, waits forever without a credential, and otherwise resends through its own transport, around
            // HTTPDNS. The challenge is handed over as X-HTTPDNS-WWW-Authenticate instead.
            let name = response.response.status.code == 401 && header.name.lowercased() == "www-authenticate" ? "X-HTTPDNS-WWW-Authenticate" : header.name
            fields[name] = fields[name].map { "\($0), \(header.value)" } ?? header.value
        }
        guard let head = HTTPURLResponse(url: finalURL, statusCode: Int(response.response.status.code), httpVersion: "HTTP/1.1", headerFields: fields) else {
            client?.urlProtocol(self, didFailWithError: URLError(.badServerResponse))
            return
        }
        if installation.setsCookies, request.httpShouldHandleCookies, let storage = installation.cookies {
            let setCookies = response.response.headers["set-cookie"]
            if !setCookies.isEmpty {
                // One field per cookie: joined with commas they could not be told apart from an Expires date.
                let cookies = setCookies.flatMap { HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": $0], for: finalURL) }
                storage.setCookies(cookies, for: finalURL, mainDocumentURL: request.mainDocumentURL)
            }
        }
        let policy = Self.storagePolicy(response.cacheStoragePolicy)
        // URLSession is told notAllowed: for a custom protocol it never stores, but with any other policy it keeps a
        // copy of the whole body to do so. The adapter stores into the cache itself, below.
        client?.urlProtocol(self, didReceive: head, cacheStoragePolicy: .notAllowed)
        var kept = Data()
        var keeping = policy != .notAllowed && installation.cache != nil
        do {
            for try await piece in response.response.body {
                let data = Data(piece.readableBytesView)
                if Self.streamsBody {
                    client?.urlProtocol(self, didLoad: data)
                    if keeping {
                        kept.append(data)
                        if kept.count > Self.maxCachedBodyBytes { (keeping, kept) = (false, Data()) }
                    }
                } else {
                    kept.append(data)
                }
            }
        } catch {
            client?.urlProtocol(self, didFailWithError: Self.urlError(error, url: url))
            return
        }
        if !Self.streamsBody, !kept.isEmpty { client?.urlProtocol(self, didLoad: kept) }
        if keeping, kept.count <= Self.maxCachedBodyBytes, let cache = installation.cache {
            // Under the URL that answered (the last hop's), as URLSession keeps a redirected response.
            var answered = request
            answered.url = finalURL
            // As the last hop was sent: a redirect may have made a POST a GET without its body.
            answered.httpMethod = response.request.method
            if response.request.method != request.httpMethod {
                answered.httpBody = nil
                answered.httpBodyStream = nil
            }
            cache.storeCachedResponse(CachedURLResponse(response: head, data: kept, userInfo: nil, storagePolicy: policy), for: answered)
        }
        client?.urlProtocolDidFinishLoading(self)
    }

    static func storagePolicy(_ policy: CacheStoragePolicy) -> URLCache.StoragePolicy {
        switch policy {
        case .allowed: .allowed
        case .allowedInMemoryOnly: .allowedInMemoryOnly
        case .notAllowed: .notAllowed
        }
    }

    /// The interceptor's error as the URLError a URLSession caller expects, with the interceptor's own message and
    /// error kept in its user info.
    static func urlError(_ error: any Error, url: URL) -> URLError {
        let code: URLError.Code
        switch (error as? InterceptorError)?.code {
        case .invalidRequest?: code = .badURL
        case .resolutionFailed?: code = .cannotFindHost
        case .connectFailed?: code = .cannotConnectToHost
        case .certificateRejected?: code = .serverCertificateUntrusted
        case .timeout?: code = .timedOut
        case .cancelled?: code = .cancelled
        case .tooManyRedirects?: code = .httpTooManyRedirects
        case .insecureRedirect?: code = .appTransportSecurityRequiresSecureConnection
        case .invalidRedirect?: code = .badServerResponse
        default: code = .networkConnectionLost  // transportFailed, shutdown, a code added later, or not ours
        }
        return URLError(code, userInfo: [NSLocalizedDescriptionKey: "\(error)", NSURLErrorFailingURLErrorKey: url, NSUnderlyingErrorKey: error])
    }
}

/// ``HTTPDNSURLProtocol`` handing the body over in pieces as they arrive, for sessions whose data delegate reads
/// them (`urlSession(_:dataTask:didReceive:)`). Completion-handler tasks would keep only the last piece.
open class HTTPDNSStreamingURLProtocol: HTTPDNSURLProtocol {
    override open class var streamsBody: Bool { true }
}

/// The protocol, carried into the task that loads for it. URLSession calls `startLoading` and `stopLoading` on its
/// own queue. The client methods are not themselves thread-safe (FoundationNetworking's client keeps unlocked
/// state): they are called from that one task only, one after another, and each hands its work on to the session's
/// delegate queue, whose completed-task checks absorb a failure reported after `stopLoading`.
private struct ProtocolBox: @unchecked Sendable {
    let value: HTTPDNSURLProtocol
    init(_ value: HTTPDNSURLProtocol) { self.value = value }
}

/// A request's `httpBodyStream` as byte buffers, read up to 64 KiB at a time on the adapter's own thread pool: a
/// stream's `read` may block (a pipe, a file on a slow disk), and must hold neither a thread of the cooperative pool
/// nor one of NIO's shared blocking pool, which other work needs. The stream is closed when the body ends, fails, or
/// is dropped unread (a request that failed or was cancelled).
///
/// `@unchecked Sendable`: the stream is used by one iterator, one read at a time (each `next()` awaits its read
/// before the next can begin), so it is never touched from two threads at once.
struct InputStreamBytes: AsyncSequence, @unchecked Sendable {
    typealias Element = ByteBuffer
    let stream: InputStream

    /// The threads that read upload streams: at most this many uploads read at once; more wait their turn.
    static let readers: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
        return pool
    }()

    init(_ stream: InputStream) { self.stream = stream }

    /// The stream, opened on the first read and closed once: at its end, on an error, or when the body is dropped.
    final class Reader: @unchecked Sendable {
        private let stream: InputStream
        private var opened = false
        private var closed = false

        init(_ stream: InputStream) { self.stream = stream }

        /// On a reader thread, one call at a time.
        func read() throws -> ByteBuffer? {
            guard !closed else { return nil }
            if !opened {
                stream.open()
                opened = true
            }
            var buffer = ByteBuffer()
            var result = 0
            // Read straight into the buffer: no copy of the bytes.
            _ = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 64 * 1024) { bytes in
                result = stream.read(bytes.bindMemory(to: UInt8.self).baseAddress!, maxLength: bytes.count)
                return Swift.max(0, result)
            }
            if result < 0 {
                let error = stream.streamError ?? URLError(.cannotDecodeRawData)
                close()
                throw error
            }
            if result == 0 {
                close()
                return nil
            }
            return buffer
        }

        private func close() {
            guard opened, !closed else { return }
            closed = true
            stream.close()
        }

        deinit { close() }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let reader: Reader

        mutating func next() async throws -> ByteBuffer? {
            let reader = self.reader
            return try await InputStreamBytes.readers.runIfActive { try reader.read() }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: Reader(stream)) }
}

/// The URLSession adapter cannot be installed as asked.
///
/// Compare errors by ``code``; the ``description`` is for people and may change.
public struct HTTPDNSURLProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for why the adapter cannot be installed. A struct, not an enum, so that codes
    /// can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case alreadyInstalled = "already_installed"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The protocol is installed with another client or other cookie and cache stores: uninstall it first.
        public static let alreadyInstalled = Code(.alreadyInstalled)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`already_installed`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// Why the adapter cannot be installed.
    public let code: Code
    /// What is wrong and what to do about it.
    public let description: String
    /// The error underneath, when there is one (installing has none today). Not compared or hashed: two errors are
    /// the same when their code and description are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: why the adapter cannot be installed.
    ///   - description: what is wrong and what to do about it.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, _ description: String, cause: (any Error)? = nil) {
        self.code = code
        self.description = description
        self.cause = cause
    }

    public static func == (lhs: HTTPDNSURLProtocolError, rhs: HTTPDNSURLProtocolError) -> Bool {
        lhs.code == rhs.code && lhs.description == rhs.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(description)
    }
}
