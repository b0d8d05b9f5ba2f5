import HTTPDNSCore
import HTTPDNSMetrics
import Prometheus
import Testing

/// `MetricsHTTPServerError` follows docs/API-CONVENTIONS.md: a struct code callers branch on, a message for people,
/// and the error underneath as a `cause` that equality ignores.
@Suite struct MetricsErrorCodeTests {
    @Test(arguments: [
        ("port", { @Sendable (c: inout MetricsHTTPServer.Configuration) in c.port = 70_000 }),
        ("maxConnections", { @Sendable (c: inout MetricsHTTPServer.Configuration) in c.maxConnections = 0 }),
    ] as [(String, @Sendable (inout MetricsHTTPServer.Configuration) -> Void)])
    func aSettingThatCannotWorkIsAnInvalidConfigurationNamingIt(
        key: String,
        change: @Sendable (inout MetricsHTTPServer.Configuration) -> Void
    ) async {
        var configuration = MetricsHTTPServer.Configuration()
        configuration.port = 0
        change(&configuration)
        let error = await #expect(throws: MetricsHTTPServerError.self) {
            let exposition = PrometheusExposition(registry: PrometheusCollectorRegistry())
            try await withMetricsHTTPServer(exposition: exposition, configuration: configuration) { _, _ in }
        }
        #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
        let cause = error?.cause as? ConfigurationError
        #expect(cause?.key == key && cause?.code == .outOfRange, "\(String(describing: cause))")
        #expect(error?.description.hasPrefix("\(key) ") == true, "the message is as before: \(String(describing: error))")
    }

    @Test func theCauseIsNotComparedAndEveryCodeHasItsOwnWord() {
        let withCause = MetricsHTTPServerError(.stoppedBeforeListening, "stopped", cause: CancellationError())
        let without = MetricsHTTPServerError(.stoppedBeforeListening, "stopped")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
        let all = MetricsHTTPServerError.Code.all
        #expect(all.count == 2)
        #expect(Set(all.map(\.description)) == ["invalid_configuration", "stopped_before_listening"])
    }
}
