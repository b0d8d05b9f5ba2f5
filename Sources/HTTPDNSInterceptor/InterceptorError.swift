import HTTPDNSCore

/// Why the interceptor could not bring back a response, with a message that says what happened to which host.
///
/// Compare errors by ``code``; the ``message`` is for people and may change. The error underneath (the resolver's
/// `ResolutionError`, AsyncHTTPClient's, NIO's or TLS's) is kept as ``cause``.
public struct InterceptorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the kind of failure (usable as a metric dimension). A struct, not an enum,
    /// so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case invalidRequest = "invalid_request"
            case resolutionFailed = "resolution_failed"
            case connectFailed = "connect_failed"
            case certificateRejected = "certificate_rejected"
            case timeout
            case cancelled
            case tooManyRedirects = "too_many_redirects"
            case insecureRedirect = "insecure_redirect"
            case invalidRedirect = "invalid_redirect"
            case transportFailed = "transport_failed"
            case shutdown
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The request cannot be sent as given: its URL, method or a header (``CanonicalRequestError``'s reason).
        public static let invalidRequest = Code(.invalidRequest)
        /// No source could resolve the host, or the answer was negative or refused by the hijack guard.
        public static let resolutionFailed = Code(.resolutionFailed)
        /// No address of the answer could be connected to.
        public static let connectFailed = Code(.connectFailed)
        /// The origin's certificate is not valid for the host. Failed at once: the next address is not tried.
        public static let certificateRejected = Code(.certificateRejected)
        /// The response did not begin before the request's deadline.
        public static let timeout = Code(.timeout)
        /// The caller's task was cancelled.
        public static let cancelled = Code(.cancelled)
        /// More redirects than the configuration allows.
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// A redirect from https to http, which is refused unless the configuration allows it.
        public static let insecureRedirect = Code(.insecureRedirect)
        /// The origin redirected to a Location that cannot be sent (not a URL, not http or https, a host DNS cannot
        /// hold): the origin's fault, not the caller's.
        public static let invalidRedirect = Code(.invalidRedirect)
        /// The connection failed after the request was sent, so it is not sent again.
        public static let transportFailed = Code(.transportFailed)
        /// The interceptor was shut down.
        public static let shutdown = Code(.shutdown)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`connect_failed`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong, naming the host and, where there is one, the address.
    public let message: String
    /// The error underneath, when there is one: the resolver's, AsyncHTTPClient's, NIO's, TLS's. Not compared or
    /// hashed: two errors are the same when their code and message are.
    public let cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// The resolver's error, when resolution failed: the ``cause`` when it is one.
    public var resolutionError: ResolutionError? { cause as? ResolutionError }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: InterceptorError, rhs: InterceptorError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }
}
