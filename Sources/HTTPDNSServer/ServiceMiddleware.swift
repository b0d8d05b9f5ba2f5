import HTTPDNSCore
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import Synchronization

/// Runs first on every request: rejects over-long URLs and clients over their rate, times the request for
/// `http_server_request_duration_seconds{route,method,status}`, and counts and logs every rejection.
struct ServiceMiddleware: RouterMiddleware {
    typealias Context = HTTPDNSRequestContext

    let configuration: HTTPDNSServerConfiguration
    let rateLimiter: RateLimiter?
    let clock: any MonotonicClock
    let requestMetrics = RequestMetrics()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let status: HTTPResponse.Status
        do {
            try admit(request, context: context)
            let response = try await next(request, context)
            status = response.status
            record(request, context: context, status: status, started: started)
            return response
        } catch let error as ServiceError {
            if let reason = error.rejectionReason {
                Counter(label: "httpdns_server_rejected_total", dimensions: [("reason", reason)]).increment()
                context.logger.debug(
                    "request rejected",
                    metadata: ["http.rejection.reason": "\(reason)", "http.response.status_code": "\(error.status.code)"]
                )
            }
            record(request, context: context, status: error.status, started: started)
            throw error
        } catch let error as any HTTPResponseError {
            record(request, context: context, status: error.status, started: started)
            throw error
        } catch {
            record(request, context: context, status: .internalServerError, started: started)
            throw error
        }
    }

    private func admit(_ request: Request, context: Context) throws {
        if let target = request.head.path, target.utf8.count > configuration.maxURLLength {
            throw ServiceError(
                status: .uriTooLong,
                code: "URLTooLong",
                message: "the request target is \(target.utf8.count) bytes; at most \(configuration.maxURLLength) are accepted",
                rejectionReason: "url_too_long"
            )
        }
        if let rateLimiter, let wait = rateLimiter.admit(context.clientAddress, nowNanoseconds: clock.now().nanoseconds) {
            let seconds = max(1, Int(wait.rounded(.up)))
            throw ServiceError(
                status: .tooManyRequests,
                code: "RateLimited",
                message: "too many requests from this address; retry in \(seconds) s",
                headers: [.retryAfter: String(seconds)],
                rejectionReason: "rate_limited"
            )
        }
    }

    private func record(_ request: Request, context: Context, status: HTTPResponse.Status, started: ContinuousClock.Instant) {
        let elapsed = started.duration(to: .now).components
        // The route template (`/:account/d`), never the path itself: bounded, and free of account ids.
        requestMetrics.timer(route: context.endpointPath ?? "unmatched", method: request.method, status: status)
            .recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }
}

/// The request-duration timers, made once per (route, method, status) rather than looked up in the metrics
/// factory on every request.
final class RequestMetrics: Sendable {
    private struct Key: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }

    private let timers = Mutex<[Key: Metrics.Timer]>([:])

    /// Methods a client may send are unbounded over HTTP/2; the label keeps the usual ones and folds the rest.
    private static let knownMethods: Set<HTTPRequest.Method> = [.get, .post, .head, .put, .delete, .patch, .options]

    func timer(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status) -> Metrics.Timer {
        let method = Self.knownMethods.contains(method) ? method : HTTPRequest.Method("OTHER")!
        let key = Key(route: route, method: method, status: status)
        return timers.withLock { timers in
            if let timer = timers[key] { return timer }
            let timer = Metrics.Timer(
                label: "http_server_request_duration_seconds",
                dimensions: [("route", route), ("method", method.rawValue), ("status", String(status.code))],
                preferredDisplayUnit: .seconds
            )
            timers[key] = timer
            return timer
        }
    }
}
