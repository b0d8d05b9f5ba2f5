import HTTPDNSMetrics
import HTTPDNSTesting
import Prometheus
import Testing

/// The metrics server's scoped form: it listens for the body's length, curl reads `/metrics` from it, and it is
/// closed once the body ends.
@Suite struct MetricsHTTPServerTests {
    @Test func theScopedServerAnswersWhileItsBodyRunsAndClosesAfter() async throws {
        let curl = try #require(ChildProcess.find("curl"), "curl is missing: run scripts/install-deps.sh")
        // A registry of the test's own: swift-metrics' global bootstrap is left alone.
        let registry = PrometheusCollectorRegistry()
        // No help of its own: the exposition's `# HELP` is the module's.
        registry.makeCounter(descriptor: MetricNameDescriptor(namespace: "httpdns", subsystem: "network", metricName: "changes", unitName: "total", helpText: "")).increment()
        var configuration = MetricsHTTPServer.Configuration()
        configuration.port = 0
        let url = try await withMetricsHTTPServer(exposition: PrometheusExposition(registry: registry), configuration: configuration) { _, address in
            let url = "http://127.0.0.1:\(try #require(address.port))/metrics"
            let run = try await ChildProcess.run(executable: curl, arguments: ["-s", "-f", url])
            #expect(run.status == .exited(0), "\(run)")
            #expect(run.stdout.contains("# HELP httpdns_network_changes_total "), "\(run.stdout)")
            #expect(run.stdout.contains("httpdns_network_changes_total 1"), "\(run.stdout)")
            return url
        }
        let after = try await ChildProcess.run(executable: curl, arguments: ["-s", "-f", "--max-time", "5", url])
        #expect(after.status != .exited(0), "still answering after its scope: \(after)")
    }

    @Test func aServerThatCannotStartSaysWhy() async throws {
        var configuration = MetricsHTTPServer.Configuration()
        configuration.port = 70_000
        await #expect(throws: MetricsHTTPServerError.self) {
            try await withMetricsHTTPServer(exposition: PrometheusExposition(registry: PrometheusCollectorRegistry()), configuration: configuration) { _, _ in }
        }
    }
}
