import ArgumentParser
import Foundation
import HTTPDNSCAres
import HTTPDNSCommandLine
import HTTPDNSCore
import HTTPDNSMetrics
import HTTPDNSServer
import HTTPDNSSettings
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `httpdns serve`: the HTTPDNS service, until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve HTTPDNS (/d, /resolve), DoH and JSON DNS (/dns-query), /metrics, /healthz and /readyz.",
        discussion: """
            Settings come from --config (JSON), then HTTPDNS_… environment variables, then flags; later wins. \
            Every key is in docs/SERVICE.md. Listens on 127.0.0.1:8053 unless told otherwise.
            """
    )

    @Option(help: "A JSON configuration file (also HTTPDNS_CONFIG).")
    var config: String?

    @Option(help: "Where to listen, HOST:PORT or [IPv6]:PORT (default 127.0.0.1:8053).")
    var listen: String?

    @Option(
        name: .customLong("upstream"),
        help: """
            An upstream DNS server: IP[:PORT] (plain DNS), tls://IP[:PORT][#NAME] (DNS over TLS, port 853) or \
            https://IP[:PORT][/PATH][#NAME] (DNS over HTTPS, /dns-query); the certificate must hold NAME, else the IP. \
            Repeatable; asked in order, failing over (default: /etc/resolv.conf).
            """
    )
    var upstreams: [String] = []

    @Flag(name: .customLong("upstream-tcp"), help: "Ask plain DNS upstream servers over TCP.")
    var upstreamTCP = false

    @Option(name: .customLong("upstream-cacert"), help: "A PEM file of CA certificates to trust for tls:// and https:// upstreams, besides the system's.")
    var upstreamCACert: String?

    @Option(name: .customLong("upstream-pin"), help: "An SPKI pin, sha256//BASE64, that the tls:// and https:// upstreams' keys must match; repeatable.")
    var upstreamPins: [String] = []

    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain; with --tls-key, serve TLS with ALPN h2 and http/1.1.")
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "PEM private key for --tls-cert.")
    var tlsKey: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default info).")
    var logLevel: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        var flags: [String: [String]] = [:]
        flags[ServeSettings.listen.key] = listen.map { [$0] }
        flags[ServeSettings.upstream.key] = upstreams
        flags[ServeSettings.upstreamTCP.key] = upstreamTCP ? ["true"] : nil
        flags[ServeSettings.upstreamCACert.key] = upstreamCACert.map { [$0] }
        flags[ServeSettings.upstreamPins.key] = upstreamPins
        flags[ServeSettings.tlsCert.key] = tlsCert.map { [$0] }
        flags[ServeSettings.tlsKey.key] = tlsKey.map { [$0] }
        flags[ServeSettings.logLevel.key] = logLevel.map { [$0] }
        // Everything is checked here, once, so that any bad setting exits 2 before anything starts.
        let settings: ServeSettings
        do {
            let reader = try SettingsReader(
                settings: ServeSettings.table,
                file: config ?? environment["HTTPDNS_CONFIG"],
                environment: environment,
                flags: flags
            )
            settings = try await ServeSettings(reading: reader)
        } catch {
            Output.diagnostic("httpdns serve: \(error)")
            throw ExitCode(ExitStatus.usage)
        }
        let serverConfiguration = settings.server

        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        var logger = Logger(label: "httpdns")
        logger.logLevel = Logger.Level(rawValue: settings.logLevel) ?? .info

        let metrics = MetricsEndpoint(contentType: "text/plain; version=0.0.4; charset=utf-8") {
            var text: [UInt8] = []
            registry.emit(into: &text)
            let help = ResolverMetricFamilies.help.merging(ServerMetricFamilies.help) { first, _ in first }
            return PrometheusExposition.withHelp(text, help: help.merging(ServeUpstream.help) { first, _ in first })
        }
        let source: ServeUpstream
        let service: HTTPDNSService
        do {
            source = try ServeUpstream(settings: settings, logger: logger)
            // The settings passed these libraries' checks already; these cannot fail, but if they did, they would
            // say why and exit 2, like any other setting.
            let cache = try ResolverCache(source: source.resolver, configuration: settings.cache, logger: logger)
            service = try HTTPDNSService(configuration: serverConfiguration, resolver: cache, metrics: metrics)
        } catch {
            Output.diagnostic("httpdns serve: \(error)")
            throw ExitCode(ExitStatus.usage)
        }
        logger.info(
            "starting",
            metadata: [
                "listen": "\(serverConfiguration.host):\(serverConfiguration.port)",
                "tls": "\(serverConfiguration.tlsCertificatePath != nil)",
                "upstream": "\(source.logDescription)",
                "upstream.transport": "\(source.transport)",
                "accounts": "\(serverConfiguration.accounts.count)",
            ]
        )
        for plain in source.unencrypted {
            let asked =
                source.members.first === plain ? "" : " (asked when the encrypted upstreams listed before it give no answer at all)"
            let warning =
                "the upstream path is unencrypted: plain DNS (\(plain.transport)) to \(plain.logDescription)\(asked) can be read and "
                + "changed by anyone on the way; use tls:// (DNS over TLS) or https:// (DNS over HTTPS) upstreams to close it"
            logger.warning("\(warning)")
        }
        let startedLogger = logger
        // The source comes first: the group shuts services down in reverse order, so the service drains its
        // requests before the source it resolves through stops.
        do {
            let application = try service.makeApplication(logger: logger) { port in
                startedLogger.info("listening", metadata: ["port": "\(port)"])
            }
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: source, serviceName: source.name), .init(service: application, serviceName: "httpdns")],
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger
                )
            )
            try await group.run()
        } catch {
            await source.shutdown()
            Output.diagnostic("httpdns serve: \(error)")
            throw ExitCode(ExitStatus.unreachable)
        }
        logger.info("stopped")
    }
}
