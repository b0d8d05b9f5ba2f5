import Logging
import ServiceLifecycle

extension HostResolver: Service {
    /// Lets go of every source the resolver was made with, the trusted one and each fallback (their connections,
    /// threads and sockets): a resolver owns its sources. Lookups after it fail with
    /// ``ResolutionError/Code/shutdown``. Idempotent.
    public func shutdown() async {
        isShutDown.store(true, ordering: .relaxed)
        for cache in [trusted] + fallbacks { await cache.source.shutdown() }
    }

    /// Runs until graceful shutdown (or cancellation) of its `ServiceGroup`, then shuts down every source. Put it
    /// before the services that resolve through it, so that the group, which stops services in reverse order, stops
    /// them first.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}

/// Makes a ``HostResolver`` over `trusted` and `fallbacks`, runs `body` with it, and shuts it down, and so every
/// source, when `body` returns or throws: the scoped form of the resolver's lifecycle. The sources are shut down too
/// when the resolver cannot be made (a configuration that does not validate).
public func withHostResolver<Result>(
    trusted: any ResolutionSource,
    fallbacks: [any ResolutionSource],
    configuration: HostResolver.Configuration = HostResolver.Configuration(),
    logger: Logger = Logger(label: "httpdns.resolver"),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (HostResolver) async throws -> Result
) async throws -> Result {
    let resolver: HostResolver
    do {
        resolver = try HostResolver(trusted: trusted, fallbacks: fallbacks, configuration: configuration, logger: logger)
    } catch {
        for source in [trusted] + fallbacks { await source.shutdown() }
        throw error
    }
    return try await withShutdown { try await body(resolver) } shutdown: { await resolver.shutdown() }
}

extension ResolutionSource where Self: Service {
    /// A source in a `ServiceGroup`: it resolves from the start, and on graceful shutdown (or cancellation) lets go
    /// of what it holds. A source that a ``HostResolver`` owns needs no service of its own: the resolver's shuts
    /// it down.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}

/// Runs `body` with `source` and shuts the source down when `body` returns or throws: the scoped form of a source's
/// lifecycle, for a source used without a ``HostResolver`` (which owns its sources, and whose scoped form is
/// `withHostResolver`).
public func withResolutionSource<Source: ResolutionSource, Result>(
    _ source: Source,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (Source) async throws -> Result
) async throws -> Result {
    try await withShutdown { try await body(source) } shutdown: { await source.shutdown() }
}

/// Runs `body`, then `shutdown`, however `body` ends: the core of every scoped form.
package func withShutdown<Result>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: () async throws -> Result,
    shutdown: () async -> Void
) async throws -> Result {
    let result: Swift.Result<Result, any Error>
    do {
        result = .success(try await body())
    } catch {
        result = .failure(error)
    }
    await shutdown()
    return try result.get()
}
