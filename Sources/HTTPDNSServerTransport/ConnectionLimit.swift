import HummingbirdCore
import Metrics

/// At most `limit` connections open at once: past it the service stops accepting, and the kernel's backlog holds
/// new clients until a connection closes. Descriptors are what a crowd of idle or slow clients exhausts; held to a
/// number below the process's limit, there are always some left for the upstream, the warm-start file and logs.
///
/// Records `httpdns_server_connections` (open now) and `httpdns_server_connection_limit_reached_total` (times
/// the limit was reached, so that accepting paused).
public struct ConnectionLimit: AvailableConnectionsDelegate {
    public let limit: Int
    private var open = 0
    private let openGauge = Gauge(label: "httpdns_server_connections")
    private let limitReached = Counter(label: "httpdns_server_connection_limit_reached_total")

    public init(limit: Int) {
        self.limit = limit
    }

    public mutating func connectionOpened() {
        open += 1
        openGauge.record(open)
        if open == limit { limitReached.increment() }
    }

    public mutating func connectionClosed() {
        open -= 1
        openGauge.record(open)
    }

    public func isAcceptingNewConnections() -> Bool {
        open < limit
    }
}
