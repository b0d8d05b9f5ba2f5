import HTTPDNSCore
import Logging
import NIOCore
import ServiceLifecycle

extension InterceptingHTTPClient: Service {
    /// Runs until graceful shutdown (or cancellation) of its `ServiceGroup`, then shuts the client down. The
    /// resolver is not the client's: it may serve others, and is shut down by its own service or scope.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}

/// Makes an ``InterceptingHTTPClient`` over `resolver`, runs `body` with it, and shuts it down when `body` returns or
/// throws: the scoped form of the client's lifecycle, as AsyncHTTPClient's `withHTTPClient` is. The resolver is left
/// running (use `withHostResolver` around it).
public func withInterceptingHTTPClient<Result>(
    resolver: HostResolver,
    configuration: InterceptingHTTPClient.Configuration = InterceptingHTTPClient.Configuration(),
    logger: Logger = Logger(label: "httpdns.interceptor"),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (InterceptingHTTPClient) async throws -> Result
) async throws -> Result {
    let client = try InterceptingHTTPClient(resolver: resolver, configuration: configuration, logger: logger)
    return try await withShutdown { try await body(client) } shutdown: { await client.shutdown() }
}
