import HTTPDNSSynchronization
import HTTPTypes
import Metrics

/// The request-duration timers, made once per (route, method, status) rather than looked up in the metrics
/// factory on every request.
public final class RequestMetrics: Sendable {
    public init() {}

    private struct Key: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }

    private let timers = Mutex<[Key: Metrics.Timer]>([:])

    /// Methods a client may send are unbounded over HTTP/2; the label keeps the usual ones and folds the rest.
    private static let knownMethods: Set<HTTPRequest.Method> = [.get, .post, .head, .put, .delete, .patch, .options]

    /// Records one request's duration, from `started` to now.
    public func record(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status, since started: ContinuousClock.Instant) {
        Self.record(timer(route: route, method: method, status: status), since: started)
    }

    private static func record(_ timer: Metrics.Timer, since started: ContinuousClock.Instant) {
        let elapsed = started.duration(to: .now).components
        timer.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }

    /// The timers one connection's cache hits use, kept by the connection: recording a hit then takes no lock and
    /// no hashing. Hits are GETs of two routes, so the list stays short.
    struct HitTimers {
        let metrics: RequestMetrics
        private var timers: [(route: String, status: HTTPResponse.Status, timer: Metrics.Timer)] = []

        init(metrics: RequestMetrics) {
            self.metrics = metrics
        }

        mutating func record(route: String, status: HTTPResponse.Status, since started: ContinuousClock.Instant) {
            let timer: Metrics.Timer
            if let known = timers.first(where: { $0.route == route && $0.status == status }) {
                timer = known.timer
            } else {
                timer = metrics.timer(route: route, method: .get, status: status)
                timers.append((route, status, timer))
            }
            RequestMetrics.record(timer, since: started)
        }
    }

    private func timer(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status) -> Metrics.Timer {
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
