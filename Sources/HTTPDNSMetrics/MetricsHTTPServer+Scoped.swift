import Logging
import NIOCore

/// Starts a ``MetricsHTTPServer``, runs `body` with it and the address it listens on once it does, and stops it when
/// `body` returns or throws: the scoped form of the server's lifecycle, beside running it as a `Service`.
/// - Throws: the server's own error when it cannot start (an address it cannot bind, a configuration that cannot
///   work), or what `body` throws.
public func withMetricsHTTPServer<Result: Sendable>(
    exposition: PrometheusExposition,
    configuration: MetricsHTTPServer.Configuration = MetricsHTTPServer.Configuration(),
    logger: Logger = Logger(label: "httpdns.metrics"),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (MetricsHTTPServer, SocketAddress) async throws -> Result
) async throws -> Result {
    let server = MetricsHTTPServer(exposition: exposition, configuration: configuration, logger: logger)
    return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
        group.addTask { try await server.run() }
        guard let address = await server.waitUntilListening() else {
            // run() ended without binding: its error says why.
            try await group.next()
            throw MetricsHTTPServerError(.stoppedBeforeListening, "the metrics server stopped before it listened")
        }
        defer { group.cancelAll() }
        return try await body(server, address)
    }
}
