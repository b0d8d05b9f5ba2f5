import HTTPDNSCore
import HTTPDNSMetrics
import HTTPDNSServer
import HTTPDNSTesting
import Hummingbird
import HummingbirdTesting
import Logging
import Metrics
import Prometheus
import Testing

/// A service in front of a stub source, tested in-process through Hummingbird's router test framework.
struct ServiceFixture {
    let source: StaticSource
    let clock: ManualMonotonicClock
    let cache: ResolverCache
    let registry = PrometheusCollectorRegistry()
    let service: HTTPDNSService

    init(
        _ replies: [String: StaticSource.Reply] = [:],
        unixTime: Int64 = 1_800_000_000,
        _ configure: (inout HTTPDNSServerConfiguration) -> Void = { _ in }
    ) throws {
        try self.init(source: StaticSource(replies), upstream: nil, unixTime: unixTime, configure)
    }

    /// A service whose cache asks `upstream`, a source the test drives (``source`` is then an empty one, never asked).
    init(upstream: any ResolutionSource, _ configure: (inout HTTPDNSServerConfiguration) -> Void = { _ in }) throws {
        try self.init(source: StaticSource(), upstream: upstream, unixTime: 1_800_000_000, configure)
    }

    private init(
        source: StaticSource,
        upstream: (any ResolutionSource)?,
        unixTime: Int64,
        _ configure: (inout HTTPDNSServerConfiguration) -> Void
    ) throws {
        self.source = source
        clock = ManualMonotonicClock()
        var cacheConfiguration = ResolverCache.Configuration()
        cacheConfiguration.refreshAheadFraction = 0
        cache = try ResolverCache(source: upstream ?? source, configuration: cacheConfiguration, clock: clock)
        var configuration = HTTPDNSServerConfiguration()
        configuration.rateLimitPerSecond = 0
        configure(&configuration)
        let registry = self.registry
        let metrics = MetricsEndpoint(contentType: "text/plain; version=0.0.4; charset=utf-8") {
            var text: [UInt8] = []
            registry.emit(into: &text)
            return PrometheusExposition.withHelp(text, help: ResolverMetricFamilies.help.merging(ServerMetricFamilies.help) { first, _ in first })
        }
        service = try HTTPDNSService(configuration: configuration, resolver: cache, metrics: metrics, clock: clock, unixTime: { unixTime })
    }

    /// Runs `body` against the service's router, with swift-metrics writing to this fixture's registry.
    func test(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let application = Application(router: service.makeRouter())
        try await withMetricsFactory(PrometheusMetricsFactory(registry: registry)) {
            try await application.test(.router) { client in try await body(client) }
        }
    }
}

extension ServiceFixture {
    /// Runs `body` against the whole service on a loopback port: ``HTTPDNSService/makeApplication(logger:onListening:)``,
    /// whose event-loop cache-hit path sits in front of the router.
    func testLive(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let application = try service.makeApplication(logger: Logger(label: "httpdns.test"))
        try await withMetricsFactory(PrometheusMetricsFactory(registry: registry)) {
            try await application.test(.live) { client in try await body(client) }
        }
    }
}

extension TestResponse {
    var text: String { String(buffer: body) }
}
