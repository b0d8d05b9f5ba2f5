import HTTPDNSCore
import HTTPDNSServerTransport
import HTTPDNSSynchronization
import HTTPTypes
import Hummingbird
import Logging
import Metrics

/// Runs first on every request: admits it (``Admission``), times it for
/// `http_server_request_duration_seconds{route,method,status}`, and counts and logs every rejection.
struct ServiceMiddleware: RouterMiddleware {
    typealias Context = HTTPDNSRequestContext

    let admission: Admission
    let requestMetrics: RequestMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        // The route template (`/:account/d`), never the path itself: bounded, and free of account ids.
        let route = { context.endpointPath ?? "unmatched" }
        do {
            try admission.admit(target: request.head.path, client: { context.clientAddress })
            let response = try await next(request, context)
            requestMetrics.record(route: route(), method: request.method, status: response.status, since: started)
            return response
        } catch let error as ServiceError {
            admission.countRejection(error, logger: context.logger)
            requestMetrics.record(route: route(), method: request.method, status: error.status, since: started)
            throw error
        } catch let error as any HTTPResponseError {
            requestMetrics.record(route: route(), method: request.method, status: error.status, since: started)
            throw error
        } catch {
            requestMetrics.record(route: route(), method: request.method, status: .internalServerError, since: started)
            throw error
        }
    }
}

/// The checks every request passes before any work is done for it: the target's length and the client's rate.
/// Shared by the router's middleware and ``CacheHitResponder``, so both paths take tokens from the same buckets.
struct Admission: Sendable {
    let maxURLLength: Int
    let rateLimiter: RateLimiter?
    let clock: any MonotonicClock

    init(configuration: HTTPDNSServerConfiguration, clock: any MonotonicClock) {
        maxURLLength = configuration.maxURLLength
        rateLimiter =
            configuration.rateLimitPerSecond > 0
            ? RateLimiter(ratePerSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst)
            : nil
        self.clock = clock
    }

    /// - Throws: ``ServiceError`` 414 for an over-long target, 429 with `Retry-After` for a client over its rate.
    /// - Parameter client: the client's address, asked for only when a rate limit is set.
    func admit(target: String?, client: () -> String) throws(ServiceError) {
        if let target, target.utf8.count > maxURLLength {
            throw ServiceError(
                status: .uriTooLong,
                code: .urlTooLong,
                message: "the request target is \(target.utf8.count) bytes; at most \(maxURLLength) are accepted",
                rejectionReason: "url_too_long"
            )
        }
        if let rateLimiter, let wait = rateLimiter.admit(client(), nowNanoseconds: clock.now().nanoseconds) {
            let seconds = max(1, Int(wait.rounded(.up)))
            throw ServiceError(
                status: .tooManyRequests,
                code: .rateLimited,
                message: "too many requests from this address; retry in \(seconds) s",
                headers: [.retryAfter: String(seconds)],
                rejectionReason: "rate_limited"
            )
        }
    }

    /// Counts a rejected request in `httpdns_server_rejected_total{reason}` and logs it at debug, so a flood of
    /// bad requests costs a counter, not a log line each.
    func countRejection(_ error: ServiceError, logger: Logger) {
        guard let reason = error.rejectionReason else { return }
        Counter(label: "httpdns_server_rejected_total", dimensions: [("reason", reason)]).increment()
        logger.debug(
            "request rejected",
            metadata: ["http.rejection.reason": "\(reason)", "http.response.status_code": "\(error.status.code)"]
        )
    }
}
