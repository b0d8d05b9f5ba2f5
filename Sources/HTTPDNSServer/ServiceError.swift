import HTTPDNSCore
import HTTPDNSServerTransport
import HTTPDNSWire
import HTTPTypes
import Hummingbird
import NIOCore

/// An error the service answers with: an HTTP status and a JSON body `{"code": …, "message": …}` whose code is
/// stable (docs/WIRE-FORMATS.md §1), plus optional headers such as `Retry-After`.
struct ServiceError: HTTPResponseError {
    let status: HTTPResponse.Status
    let code: NativeErrorCode
    let message: String
    var headers: HTTPFields = [:]
    /// The bounded reason counted in `httpdns_server_rejected_total` (`nil` for upstream failures).
    var rejectionReason: String?

    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(reply)
    }

    /// The error as it is sent: its status and headers, and `{"code": …, "message": …}`, never cached.
    var reply: Reply {
        let body = NativeErrorBody(code: code, message: message).jsonText
        return Reply(status: status, contentType: "application/json", cacheControl: .noStore, otherFields: headers, body: ByteBuffer(string: body))
    }

    static func missingArgument(_ name: String) -> ServiceError {
        ServiceError(
            status: .badRequest,
            code: .missingArgument,
            message: "the '\(name)' parameter is required",
            rejectionReason: "missing_argument"
        )
    }

    static func invalidHost(_ message: String) -> ServiceError {
        ServiceError(status: .badRequest, code: .invalidHost, message: message, rejectionReason: "invalid_host")
    }

    static func invalidQuery(_ value: String) -> ServiceError {
        ServiceError(
            status: .badRequest,
            code: .invalidQuery,
            message: "query must be 4, 6 or 4,6; got '\(value)'",
            rejectionReason: "invalid_query"
        )
    }

    static func tooManyHosts(_ count: Int, max: Int) -> ServiceError {
        ServiceError(
            status: .badRequest,
            code: .tooManyHosts,
            message: "\(count) hosts asked; at most \(max) per request",
            rejectionReason: "too_many_hosts"
        )
    }

    static func methodNotAllowed(_ method: HTTPRequest.Method, allowed: String) -> ServiceError {
        ServiceError(
            status: .methodNotAllowed,
            code: .methodNotAllowed,
            message: "\(method) is not allowed here; use \(allowed)",
            headers: [.allow: allowed],
            rejectionReason: "method_not_allowed"
        )
    }

    static func upstreamUnavailable(_ message: String, retryAfterSeconds: Int) -> ServiceError {
        ServiceError(
            status: .serviceUnavailable,
            code: .upstreamUnavailable,
            message: message,
            headers: [.retryAfter: String(retryAfterSeconds)]
        )
    }

    static func forbidden(_ code: NativeErrorCode, _ message: String) -> ServiceError {
        ServiceError(status: .forbidden, code: code, message: message, rejectionReason: "auth")
    }
}
