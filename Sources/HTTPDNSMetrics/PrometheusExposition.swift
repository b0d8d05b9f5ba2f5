import HTTPDNSCore
import Metrics
import Prometheus

/// The Prometheus text exposition of the metrics the libraries record, with their help texts: what a backend that
/// links swift-httpdns serves at `/metrics`, on its own server or on ``MetricsHTTPServer``.
///
/// The libraries record through swift-metrics; ``bootstrap(help:)`` points swift-metrics at a Prometheus registry
/// once, at start-up, before any resolver or client is made. Each module declares its own metric families
/// (`ResolverMetricFamilies`, `InterceptorMetricFamilies`, `ServerMetricFamilies`): pass the tables of the modules
/// the backend uses, merged.
public struct PrometheusExposition: Sendable {
    /// The media type of the exposition (Prometheus text format 0.0.4).
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public let registry: PrometheusCollectorRegistry
    /// Help texts by metric family name; a family without one is written without `# HELP`.
    public let help: [String: String]

    /// An exposition of `registry`, which the caller has bootstrapped swift-metrics with (or registers into itself).
    /// - Parameters:
    ///   - registry: the registry the metrics are recorded into.
    ///   - help: the help texts, by family; the resolver's by default.
    public init(registry: PrometheusCollectorRegistry, help: [String: String] = ResolverMetricFamilies.help) {
        self.registry = registry
        self.help = help
    }

    /// Bootstraps swift-metrics with a new Prometheus registry and returns its exposition. Call it once per process,
    /// before the first metric is made: swift-metrics takes one bootstrap, and metrics made before it record nowhere.
    public static func bootstrap(help: [String: String] = ResolverMetricFamilies.help) -> PrometheusExposition {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return PrometheusExposition(registry: registry, help: help)
    }

    /// The exposition now: every family with its `# TYPE`, and its `# HELP` where ``help`` has one.
    public func bytes() -> [UInt8] {
        var text: [UInt8] = []
        registry.emit(into: &text)
        return Self.withHelp(text, help: help)
    }

    /// `text`, a Prometheus text exposition, with `# HELP` inserted before each `# TYPE` line of a family that has
    /// help text in `help`. swift-prometheus's factory registers metrics without help, which `promtool` wants.
    public static func withHelp(_ text: [UInt8], help: [String: String]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(text.count + help.count * 80)
        let typePrefix = Array("# TYPE ".utf8)
        for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.starts(with: typePrefix) {
                let name = String(decoding: line.dropFirst(typePrefix.count).prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let help = help[name] {
                    output.append(contentsOf: Array("# HELP \(name) \(help)\n".utf8))
                }
            }
            output.append(contentsOf: line)
            output.append(UInt8(ascii: "\n"))
        }
        // split kept the text's final newline as an empty last line; do not double it.
        if text.last == UInt8(ascii: "\n") { output.removeLast() }
        return output
    }
}
