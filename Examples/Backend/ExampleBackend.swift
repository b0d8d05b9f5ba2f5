import ArgumentParser
import AsyncHTTPClient
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSMetrics
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A backend that links swift-httpdns and exports its metrics, both ways a backend can:
/// - with no HTTP server of its own, `MetricsHTTPServer`, one line;
/// - with its own server (Hummingbird here), `/metrics` mounted on it.
///
/// It resolves through an HTTPDNS service with a c-ares fallback behind the hijack guard, sends each `--fetch` URL
/// once through the interceptor, and serves its metrics until SIGTERM or SIGINT. Built in CI with the rest, so the
/// example in docs/METRICS.md cannot rot; the tests run it against real peers.
@main
struct ExampleBackend: AsyncParsableCommand {
    @Option(name: .customLong("server"), help: "The HTTPDNS service, https://IP[:PORT].")
    var servers: [String] = []

    @Option(help: "A PEM file of certificates to trust besides the system's.")
    var cacert: String?

    @Option(help: "The DNS server of the fallback, IP[:PORT].")
    var dns: [String] = []

    @Option(name: .customLong("fetch"), help: "A URL to send through the interceptor once.")
    var urls: [String] = []

    @Option(name: .customLong("metrics-port"), help: "The port of the metrics server (0: any free one).")
    var metricsPort = 9464

    @Option(name: .customLong("app-port"), help: "The port of the backend's own server (0: any free one).")
    var appPort = 8080

    func run() async throws {
        // The first way, in one line: swift-metrics bootstrapped with a Prometheus registry, served on 127.0.0.1.
        // Each module declares its metric families; the exposition writes the help of those the backend uses.
        let help = ResolverMetricFamilies.help.merging(InterceptorMetricFamilies.help) { first, _ in first }
        let metrics = MetricsHTTPServer(exposition: .bootstrap(help: help), port: metricsPort)

        // The second way: the same exposition mounted on the backend's own server.
        let router = Router()
        router.get("/metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: PrometheusExposition.contentType],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition.bytes()))
            )
        }
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: appPort)),
            onServerRunning: { channel in
                Self.say("app listening on \(channel.localAddress.map { "\($0)" } ?? "?")")
            }
        )

        // What the metrics are about: a resolver and the interceptor.
        let service = try NativeServiceSource(configuration: .init(connection: try connection()))
        let fallback = try CAresSource(configuration: .init(servers: try dns.map { try DNSServerAddress(parsing: $0) }))
        let resolver = try HostResolver(trusted: service, fallbacks: [fallback])
        let client = try InterceptingHTTPClient(resolver: resolver)

        let traffic = Traffic(client: client, urls: urls, metrics: metrics)
        // The resolver (which owns both sources) and the client are services too: the group stops them last, in
        // reverse order, whether it ends well or not (a metrics port in use, say). Nothing to shut down by hand.
        let services: [any Service] = [resolver, client, metrics, app, traffic]
        let group = ServiceGroup(
            configuration: .init(
                // A service that fails (a metrics port in use, say) shuts the group down gracefully too, in order,
                // rather than cancelling every service at once.
                services: services.map { .init(service: $0, failureTerminationBehavior: .gracefullyShutdownGroup) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: Logger(label: "example")
            )
        )
        try await group.run()
    }

    private func connection() throws -> ServiceConnection {
        var connection = ServiceConnection(servers: try servers.map { try ServiceEndpoint(parsing: $0) })
        connection.extraTrustRootsPEMFile = cacert
        return connection
    }

    /// A line on stderr, for whoever runs the example (and the tests that wait for it).
    static func say(_ line: String) {
        FileHandleOutput.write(line + "\n")
    }
}

/// Sends each URL once, says so, and waits for the group to shut down.
struct Traffic: Service {
    let client: InterceptingHTTPClient
    let urls: [String]
    let metrics: MetricsHTTPServer

    func run() async throws {
        if let address = await metrics.waitUntilListening() { ExampleBackend.say("metrics listening on \(address)") }
        for url in urls {
            do {
                let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
                _ = try await response.response.body.collect(upTo: 1 << 20)
                ExampleBackend.say("\(url): \(response.response.status.code)")
            } catch {
                ExampleBackend.say("\(url): \(error)")
            }
        }
        ExampleBackend.say("traffic done")
        try? await gracefulShutdown()
    }
}

#if canImport(Glibc)
    import Glibc
#endif

enum FileHandleOutput {
    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
