#if GRPC
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import HTTPDNSCore
import Logging

extension ResolvableTargets {
    /// A host that a gRPC channel resolves through a `HostResolver`: its trusted source, its cache, the
    /// hijack guard and its fallbacks, instead of the system's resolver.
    ///
    /// Resolved by `NameResolvers.HTTPDNS`, which a `NameResolverRegistry` must hold (the
    /// `HTTP2ClientTransport.Posix(httpdns:…)` initialiser sets one up).
    public struct HTTPDNS: ResolvableTarget, Sendable {
        /// The host to resolve. It is also what the channel sends as `:authority` and TLS SNI, and what the server's
        /// certificate must hold.
        public var host: HostName
        /// The server's port. Default 443.
        public var port: Int
        /// The resolver to resolve `host` through. The target does not own it: shut it down after the channel.
        public var resolver: HostResolver

        /// - Parameters:
        ///   - host: the host to resolve, and the name the server's certificate must hold.
        ///   - port: the server's port, 1 to 65,535 (a port out of range fails every call with
        ///     `ConfigurationError`).
        ///   - resolver: the resolver to resolve `host` through.
        public init(host: HostName, port: Int = 443, resolver: HostResolver) {
            self.host = host
            self.port = port
            self.resolver = resolver
        }

        /// The authority of the channel's calls: the host, followed by `:port` when the port is not 443. gRPC sends
        /// it as `:authority`, and the host part as TLS SNI.
        public var authority: String {
            port == 443 ? host.value : "\(host.value):\(port)"
        }
    }
}

extension ResolvableTarget where Self == ResolvableTargets.HTTPDNS {
    /// A host resolved through a `HostResolver` (`ResolvableTargets.HTTPDNS`).
    ///
    /// - Parameters:
    ///   - host: the host to resolve, and the name the server's certificate must hold.
    ///   - port: the server's port. Default 443.
    ///   - resolver: the resolver to resolve `host` through.
    public static func httpdns(host: HostName, port: Int = 443, resolver: HostResolver) -> Self {
        ResolvableTargets.HTTPDNS(host: host, port: port, resolver: resolver)
    }
}

extension NameResolvers {
    /// Makes the name resolvers of `ResolvableTargets.HTTPDNS` targets: push resolvers that
    /// follow the answer's TTL.
    ///
    /// Each resolver resolves the host through the target's `HostResolver` and gives the channel every address of the
    /// answer, IPv4 first, in the answer's order (grouped by `Configuration.endpoints`), with the
    /// host (and port, when not 443) as the channel's authority, so that `:authority` and TLS SNI carry the name.
    /// Then it waits until the answer's TTL has run out (as the resolver's cache counts it: the shortest of the
    /// families asked, the negative TTL of a family without addresses included) and resolves again, telling the
    /// channel only when the addresses changed. gRPC's own DNS resolver is a pull resolver, which the channel asks
    /// again only after a GOAWAY or a connection that closed badly; this one moves the channel when the answer moves.
    ///
    /// When a lookup fails (or only a stale answer can be had), the channel keeps the addresses it has and the
    /// lookup is tried again after a delay that doubles from `Configuration.retryInitialDelay` up to
    /// `Configuration.retryMaximumDelay`. When the first lookup fails, there is nothing to keep: the
    /// calls waiting for the channel fail with `HTTPDNSGRPCError.Code.resolutionFailed` (the resolver's
    /// `ResolutionError` as its cause), and the channel tries again with its own backoff.
    ///
    /// Register it in the `NameResolverRegistry` of the transport:
    ///
    /// ```swift
    /// var registry = NameResolverRegistry.defaults
    /// registry.registerFactory(try NameResolvers.HTTPDNS())
    /// var config = HTTP2ClientTransport.Posix.Config.defaults
    /// config.requireCertificateName(host)
    /// let transport = try HTTP2ClientTransport.Posix(
    ///     target: .httpdns(host: host, port: 8443, resolver: resolver),
    ///     transportSecurity: .tls,
    ///     config: config,
    ///     resolverRegistry: registry
    /// )
    /// ```
    ///
    /// `HTTP2ClientTransport.Posix(httpdns:port:resolver:…)` does all of that in one call.
    public struct HTTPDNS: NameResolverFactory, Sendable {
        public typealias Target = ResolvableTargets.HTTPDNS

        /// How the addresses of an answer are handed to the channel's load balancer.
        public struct EndpointGrouping: Sendable, Hashable, CustomStringConvertible {
            private enum Base: String, Sendable, Hashable {
                case oneEndpoint = "one_endpoint"
                case endpointPerAddress = "endpoint_per_address"
            }

            private let base: Base
            private init(_ base: Base) { self.base = base }

            /// Every address in one endpoint, in the answer's order: what the pick-first policy (gRPC's default)
            /// tries one after another until one connects, and tries again from the first when that connection
            /// ends. grpc-swift's pick-first uses the first endpoint only, so it needs this grouping to fail over.
            public static let oneEndpoint = EndpointGrouping(.oneEndpoint)
            /// An endpoint per address: for the round-robin policy, which keeps a connection to each endpoint and
            /// spreads calls over those that are ready.
            public static let endpointPerAddress = EndpointGrouping(.endpointPerAddress)

            /// The grouping for the load-balancing policy that `serviceConfig` makes a channel use: its first
            /// policy that grpc-swift supports, pick-first when it names none.
            public static func matching(_ serviceConfig: ServiceConfig) -> EndpointGrouping {
                for policy in serviceConfig.loadBalancingConfig {
                    if policy.roundRobin != nil { return .endpointPerAddress }
                    if policy.pickFirst != nil { return .oneEndpoint }
                }
                return .oneEndpoint
            }

            public var description: String { base.rawValue }
        }

        /// How the resolvers follow the answers.
        public struct Configuration: Sendable {
            /// The families to resolve. Default both (IPv4 addresses are handed over first).
            public var families: AddressFamilies = .all
            /// How the addresses are grouped into endpoints; it must suit the channel's load-balancing policy.
            /// Default `EndpointGrouping.oneEndpoint` (pick-first, gRPC's default); use
            /// `EndpointGrouping.matching(_:)` with the channel's service config.
            public var endpoints: EndpointGrouping = .oneEndpoint
            /// The shortest wait before resolving again, however short the answer's TTL (the resolver's cache
            /// keeps answers at least its `minTTL` anyway). Default 1 s.
            public var minimumRefreshInterval: Duration = .seconds(1)
            /// The wait after the first lookup that failed (or gave only a stale answer) while the channel has
            /// addresses; it doubles with each failure in a row, up to `retryMaximumDelay`. Default 1 s.
            public var retryInitialDelay: Duration = .seconds(1)
            /// The longest wait between two lookups that fail. Default 60 s.
            public var retryMaximumDelay: Duration = .seconds(60)

            public init() {}

            /// Checks the settings against each other and their ranges.
            /// - Throws: `ConfigurationError` naming the first setting that cannot work.
            public func validate() throws(ConfigurationError) {
                if families.isEmpty {
                    throw ConfigurationError(.invalidValue, key: "families", reason: "must hold IPv4, IPv6 or both, not neither")
                }
                for (key, value) in [("minimumRefreshInterval", minimumRefreshInterval), ("retryInitialDelay", retryInitialDelay)]
                where value <= .zero {
                    throw ConfigurationError(.outOfRange, key: key, reason: "must be longer than zero, not \(value)")
                }
                if retryMaximumDelay < retryInitialDelay {
                    throw ConfigurationError(
                        .inconsistent,
                        key: "retryMaximumDelay",
                        reason: "must be at least retryInitialDelay (\(retryInitialDelay)), not \(retryMaximumDelay)"
                    )
                }
            }
        }

        /// The settings of every resolver this factory makes.
        public let configuration: Configuration
        private let clock: any Clock<Duration>
        private let logger: Logger

        /// - Parameters:
        ///   - configuration: how the resolvers follow the answers.
        ///   - clock: what the resolvers wait on, between two lookups. Default `ContinuousClock`.
        ///   - logger: where changes of addresses and failed lookups are logged.
        /// - Throws: `ConfigurationError` when `configuration` does not validate.
        public init(
            configuration: Configuration = Configuration(),
            clock: any Clock<Duration> = ContinuousClock(),
            logger: Logger = Logger(label: "httpdns.grpc")
        ) throws(ConfigurationError) {
            try configuration.validate()
            self.configuration = configuration
            self.clock = clock
            self.logger = logger
        }

        /// A push resolver for `target`, with the target's `authority`
        /// as the channel's authority.
        public func resolver(for target: Target) -> NameResolver {
            NameResolver(
                names: RPCAsyncSequence(wrapping: HTTPDNSNames(target: target, configuration: configuration, clock: clock, logger: logger)),
                updateMode: .push,
                authority: target.authority
            )
        }
    }
}

/// The answers for one target, as the channel reads them: each iterator is one subscription (the channel makes a new
/// one after an iterator throws).
struct HTTPDNSNames: AsyncSequence, Sendable {
    typealias Element = NameResolutionResult
    typealias Failure = any Error

    let target: ResolvableTargets.HTTPDNS
    let configuration: NameResolvers.HTTPDNS.Configuration
    let clock: any Clock<Duration>
    let logger: Logger

    func makeAsyncIterator() -> Iterator {
        Iterator(names: self)
    }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = NameResolutionResult
        typealias Failure = any Error

        let names: HTTPDNSNames
        /// The addresses last handed to the channel; nil before the first answer.
        private var current: [IPAddress]?
        /// How long to wait before the next lookup; nil for the first.
        private var wait: Duration?
        /// Lookups that failed in a row since the last good answer.
        private var failures = 0

        init(names: HTTPDNSNames) {
            self.names = names
        }

        mutating func next() async throws -> NameResolutionResult? {
            try await next(isolation: nil)
        }

        mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> NameResolutionResult? {
            let target = names.target
            let configuration = names.configuration
            while true {
                if let wait {
                    try await names.clock.sleep(for: wait)
                }
                try Task.checkCancellation()
                do {
                    guard (1...65_535).contains(target.port) else {
                        throw ConfigurationError(.outOfRange, key: "port", reason: "must be 1 to 65535, not \(target.port)")
                    }
                    let answer = try await target.resolver.resolve(target.host, families: configuration.families)
                    let addresses = answer.resolution.addresses
                    guard !addresses.isEmpty else {
                        throw ResolutionError(.noAddress, "the answer for \(target.host) holds no address")
                    }
                    if answer.resolution.stale {
                        // Refreshing failed and the cache served its last answer: use it, and try again soon.
                        failures += 1
                        wait = retryDelay()
                        names.logger.notice(
                            "only a stale answer could be had; trying again",
                            metadata: ["httpdns.host": "\(target.host)", "httpdns.retry": "\(wait!)"]
                        )
                    } else {
                        failures = 0
                        wait = Swift.max(.seconds(Int64(answer.resolution.ttlSeconds)), configuration.minimumRefreshInterval)
                    }
                    // The same addresses in another order (a server that shuffles its answers) are no change: pushed
                    // again, pick-first would see a new endpoint and move the channel to a new connection every TTL.
                    if current.map(Set.init) != Set(addresses) {
                        names.logger.debug(
                            "addresses for the channel",
                            metadata: [
                                "httpdns.host": "\(target.host)",
                                "httpdns.addresses": "\(addresses.map(\.description).joined(separator: " "))",
                                "httpdns.source": "\(answer.source)",
                                "httpdns.next": "\(wait!)",
                            ]
                        )
                        current = addresses
                        return NameResolutionResult(endpoints: endpoints(addresses), serviceConfig: nil)
                    }
                } catch {
                    if Task.isCancelled { throw CancellationError() }
                    let failure = HTTPDNSGRPCError(
                        .resolutionFailed,
                        host: target.host.value,
                        reason: "\(error)",
                        cause: error
                    )
                    // Nothing to keep: the channel fails the calls waiting for it, and tries again with its backoff
                    // (a new iterator). A bad port or a resolver that was shut down will not get better either.
                    if current == nil || error is ConfigurationError
                        || (error as? ResolutionError)?.code == .shutdown
                    {
                        throw RPCError(code: .unavailable, message: "\(failure)", cause: failure)
                    }
                    failures += 1
                    wait = retryDelay()
                    names.logger.warning(
                        "resolving failed; the channel keeps its addresses",
                        metadata: ["httpdns.host": "\(target.host)", "httpdns.retry": "\(wait!)", "error": "\(error)"]
                    )
                }
            }
        }

        /// The wait after the `failures`-th failure in a row: the initial delay, doubled each time, at most the
        /// maximum.
        private func retryDelay() -> Duration {
            var delay = names.configuration.retryInitialDelay
            for _ in 1..<Swift.max(failures, 1) where delay < names.configuration.retryMaximumDelay {
                delay *= 2
            }
            return Swift.min(delay, names.configuration.retryMaximumDelay)
        }

        private func endpoints(_ addresses: [IPAddress]) -> [Endpoint] {
            let port = names.target.port
            let socketAddresses = addresses.map { address -> GRPCNIOTransportCore.SocketAddress in
                switch address {
                case .v4(let v4): .ipv4(host: v4.description, port: port)
                case .v6(let v6): .ipv6(host: v6.description, port: port)
                }
            }
            if names.configuration.endpoints == .endpointPerAddress {
                return socketAddresses.map { Endpoint(addresses: [$0]) }
            }
            return [Endpoint(addresses: socketAddresses)]
        }
    }
}
#endif
