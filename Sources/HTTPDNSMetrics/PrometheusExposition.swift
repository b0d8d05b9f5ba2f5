import HTTPDNSCore
import Metrics
import Prometheus

/// The Prometheus text exposition of every metric the libraries record, with their help texts: what a backend that
/// links swift-httpdns serves at `/metrics`, on its own server or on ``MetricsHTTPServer``.
///
/// The libraries record through swift-metrics; ``bootstrap()`` points swift-metrics at a Prometheus registry once,
/// at start-up, before any resolver or client is made.
public struct PrometheusExposition: Sendable {
    /// The media type of the exposition (Prometheus text format 0.0.4).
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public let registry: PrometheusCollectorRegistry

    /// An exposition of `registry`, which the caller has bootstrapped swift-metrics with (or registers into itself).
    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// Bootstraps swift-metrics with a new Prometheus registry and returns its exposition. Call it once per process,
    /// before the first metric is made: swift-metrics takes one bootstrap, and metrics made before it record nowhere.
    public static func bootstrap() -> PrometheusExposition {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return PrometheusExposition(registry: registry)
    }

    /// The exposition now: every family with its `# HELP` and `# TYPE`.
    public func bytes() -> [UInt8] {
        var text: [UInt8] = []
        registry.emit(into: &text)
        return MetricsExposition.withHelp(text)
    }
}
