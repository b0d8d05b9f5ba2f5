#if GRPC
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import HTTPDNSCore
import Logging
import NIOCore
import NIOPosix

extension HTTP2ClientTransport.Posix {
    /// A transport whose channel resolves `host` through `resolver` and holds its connections to the name.
    ///
    /// The channel's addresses come from a `NameResolvers.HTTPDNS` resolver (the resolver's trusted source, cache,
    /// hijack guard and fallbacks; re-resolved when the answer's TTL runs out), its `:authority` and TLS SNI carry
    /// `host` (with `:port` when not 443), and every connection refuses a certificate that does not hold `host` as
    /// a DNS name (`Config.requireCertificateName(_:)`). Pass it to a `GRPCClient`, or use
    /// ``withHTTPDNSGRPCClient(host:port:resolver:tls:config:serviceConfig:resolution:interceptors:logger:isolation:_:)``.
    ///
    /// The transport does not own `resolver`: shut the resolver down after the client.
    ///
    /// - Parameters:
    ///   - host: the host to call, and the name the servers' certificates must hold.
    ///   - port: the servers' port. Default 443.
    ///   - resolver: the resolver to resolve `host` through.
    ///   - tls: TLS for the connections; the trust roots and a client certificate are yours to set, but the
    ///     server's certificate is always verified in full. Default: the system's trust roots.
    ///   - config: the transport's settings; `http2.authority` must be nil (the authority, SNI and the name checked
    ///     are `host`).
    ///   - serviceConfig: the channel's service config; its load-balancing policy decides how the addresses are
    ///     grouped into endpoints (`NameResolvers.HTTPDNS.EndpointGrouping.matching(_:)`).
    ///   - resolution: how the channel follows the answers (its `endpoints` is set from `serviceConfig`).
    ///   - logger: where changes of addresses and failed lookups are logged.
    ///   - eventLoopGroup: the NIO event loops of the connections.
    /// - Throws: `ConfigurationError` when `port` is not 1 to 65,535, when `config.http2.authority` is set, when `tls`
    ///   turns a part of the certificate's
    ///   verification off (`serverCertificateVerification` other than `.fullVerification`, or a
    ///   `customVerificationCallback`, which replaces NIOSSL's verification) or when `resolution` does not
    ///   validate; grpc-swift's `RuntimeError` when the TLS settings cannot be used.
    public init(
        httpdns host: HostName,
        port: Int = 443,
        resolver: HostResolver,
        tls: TransportSecurity.TLS = .defaults,
        config: Config = .defaults,
        serviceConfig: ServiceConfig = ServiceConfig(),
        resolution: NameResolvers.HTTPDNS.Configuration = NameResolvers.HTTPDNS.Configuration(),
        logger: Logger = Logger(label: "httpdns.grpc"),
        eventLoopGroup: any EventLoopGroup = .singletonMultiThreadedEventLoopGroup
    ) throws {
        guard (1...65_535).contains(port) else {
            throw ConfigurationError(.outOfRange, key: "port", reason: "must be 1 to 65535, not \(port)")
        }
        guard tls.serverCertificateVerification == .fullVerification else {
            throw ConfigurationError(
                .invalidValue,
                key: "tls.serverCertificateVerification",
                reason: "must be .fullVerification: the server's certificate is always verified, its chain and its name"
            )
        }
        guard tls.customVerificationCallback == nil else {
            throw ConfigurationError(
                .invalidValue,
                key: "tls.customVerificationCallback",
                reason: "must be nil: it would replace TLS's own verification of the server's certificate"
            )
        }
        // The authority is the name: `:authority`, SNI and the name TLS and our check hold the certificate to. Another
        // would move all three off the host the addresses were resolved for.
        guard config.http2.authority == nil else {
            throw ConfigurationError(
                .invalidValue,
                key: "http2.authority",
                reason: "must be nil: the authority, SNI and the certificate's name are the host, \(host)"
            )
        }
        var resolution = resolution
        resolution.endpoints = .matching(serviceConfig)
        var registry = NameResolverRegistry()
        registry.registerFactory(try NameResolvers.HTTPDNS(configuration: resolution, logger: logger))
        var config = config
        config.requireCertificateName(host)
        try self.init(
            target: .httpdns(host: host, port: port, resolver: resolver),
            transportSecurity: .tls(tls),
            config: config,
            resolverRegistry: registry,
            serviceConfig: serviceConfig,
            eventLoopGroup: eventLoopGroup
        )
    }
}

/// Makes a `GRPCClient` whose channel resolves `host` through `resolver`, runs `body` with it, and shuts it down
/// gracefully when `body` returns (or at once when it throws): the scoped form, as grpc-swift's `withGRPCClient` is.
///
/// The transport is `HTTP2ClientTransport.Posix(httpdns:port:resolver:…)`: addresses from the resolver, followed by
/// their TTL; `:authority` and TLS SNI carrying the name; every connection refusing a certificate that does not hold
/// `host` as a DNS name. The resolver is left running (use `withHostResolver` around it). A generated client wraps
/// the client as usual (`Foo_Bar.Client(wrapping: client)`).
///
/// - Parameters:
///   - host: the host to call, and the name the servers' certificates must hold.
///   - port: the servers' port. Default 443.
///   - resolver: the resolver to resolve `host` through.
///   - tls: TLS for the connections; the server's certificate is always verified in full. Default: the system's
///     trust roots.
///   - config: the transport's settings.
///   - serviceConfig: the channel's service config (methods' settings, load-balancing policy).
///   - resolution: how the channel follows the answers.
///   - interceptors: the client's interceptors, in the order they run.
///   - logger: where changes of addresses and failed lookups are logged.
///   - isolation: the actor `body` runs on: the caller's, by default.
///   - body: what to do with the client.
/// - Returns: what `body` returns.
/// - Throws: what `body` throws, and what `HTTP2ClientTransport.Posix(httpdns:…)` throws.
public func withHTTPDNSGRPCClient<Result: Sendable>(
    host: HostName,
    port: Int = 443,
    resolver: HostResolver,
    tls: HTTP2ClientTransport.Posix.TransportSecurity.TLS = .defaults,
    config: HTTP2ClientTransport.Posix.Config = .defaults,
    serviceConfig: ServiceConfig = ServiceConfig(),
    resolution: NameResolvers.HTTPDNS.Configuration = NameResolvers.HTTPDNS.Configuration(),
    interceptors: [any ClientInterceptor] = [],
    logger: Logger = Logger(label: "httpdns.grpc"),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> Result
) async throws -> Result {
    let transport = try HTTP2ClientTransport.Posix(
        httpdns: host,
        port: port,
        resolver: resolver,
        tls: tls,
        config: config,
        serviceConfig: serviceConfig,
        resolution: resolution,
        logger: logger
    )
    return try await withGRPCClient(transport: transport, interceptors: interceptors, isolation: isolation, handleClient: body)
}
#endif
