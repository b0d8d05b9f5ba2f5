import HTTPDNSCore

/// Why the interceptor could not bring back a response, with a message that says what happened to which host.
public struct InterceptorError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The request cannot be sent as given: its URL, method or a header ( ``CanonicalRequestError``'s reason).
        case invalidRequest = "invalid_request"
        /// No source could resolve the host, or the answer was negative or refused by the hijack guard.
        case resolutionFailed = "resolution_failed"
        /// No address of the answer could be connected to.
        case connectFailed = "connect_failed"
        /// The origin's certificate is not valid for the host. Failed at once: the next address is not tried.
        case certificateRejected = "certificate_rejected"
        /// The response did not begin before the request's deadline.
        case timeout
        /// The caller's task was cancelled.
        case cancelled
        /// More redirects than the configuration allows.
        case tooManyRedirects = "too_many_redirects"
        /// A redirect from https to http, which is refused unless the configuration allows it.
        case insecureRedirect = "insecure_redirect"
        /// The origin redirected to a Location that cannot be sent (not a URL, not http or https, a host DNS cannot
        /// hold): the origin's fault, not the caller's.
        case invalidRedirect = "invalid_redirect"
        /// The connection failed after the request was sent, so it is not sent again.
        case transportFailed = "transport_failed"
        /// The interceptor was shut down.
        case shutdown
    }

    public let code: Code
    public let message: String
    /// The resolver's error, when resolution failed.
    public let resolutionError: ResolutionError?

    public init(_ code: Code, _ message: String, resolutionError: ResolutionError? = nil) {
        self.code = code
        self.message = message
        self.resolutionError = resolutionError
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
