#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import HTTPDNSCore
import HTTPDNSSynchronization
import Logging
import NIOCore
import NIOPosix

/// A SwiftNIO `Resolver` that resolves through a `HostResolver`: the trusted source first, through its cache, and
/// the local resolvers only when it fails, their answers judged by the hijack guard.
///
/// Give it to a `ClientBootstrap` (`bootstrap.resolver(HTTPDNSNIOResolver(resolver: resolver))`, or
/// ``NIOPosix/ClientBootstrap/resolving(with:families:)``), and `connect(host:port:)` runs NIO's own Happy
/// Eyeballs (RFC 8305) over the answer: IPv6 first, IPv4 after NIO's delay, the next address when one fails.
///
/// - NIO asks for A and AAAA records separately, AAAA first. One `HostResolver.resolve(_:families:)` call serves
///   both, so the trusted source, its cache, the guard and the fallbacks each apply once per connection. A family
///   the answer lacks (or ``families`` leaves out) is an empty list.
/// - When the lookup fails, both queries fail with the resolver's `ResolutionError` (a negative answer, every
///   source down, or `rejectedByGuard` when the guard refused the local resolver's answer), and NIO's
///   `NIOConnectionError` carries it as `dnsAError` and `dnsAAAAError`: nothing is connected to.
/// - An address literal (`127.0.0.1`, `::1`) is answered as itself, with nothing asked. A host that is neither an
///   address nor a valid DNS name fails with `HostNameError`, a port outside 0...65535 with
///   ``HTTPDNSNIOResolverError/Code/invalidPort``; no query fails by stopping the process.
/// - ``cancelQueries()`` fails the queries still waiting with ``HTTPDNSNIOResolverError/Code/cancelled`` at once,
///   and cancels their lookups.
/// - The addresses come in the order the source gave them.
///
/// One resolver serves one connection attempt at a time. A `ClientBootstrap` hands the resolver it was given to
/// every `connect` made with it (only NIO's default getaddrinfo resolver is made afresh per connect): connects made
/// one after another each get a lookup of their own, but connects in flight at once would share one resolver's
/// lookups and cancellations, so give each its own: set a new one before each connect (a resolver costs one small
/// object).
public final class HTTPDNSNIOResolver: Resolver, Sendable {
    /// The resolver every lookup goes through. Not owned: shutting it down is its owner's business.
    public let resolver: HostResolver
    /// The families asked for; a query for another family is answered with no addresses. Default both.
    public let families: AddressFamilies
    private let eventLoop: (any EventLoop)?
    private let logger: Logger
    private let state = Mutex(State())

    /// - Parameters:
    ///   - resolver: the resolver every lookup goes through.
    ///   - families: the families to ask for (`.ipv4` on a host without IPv6 routes, say); a query for another
    ///     family is answered with no addresses. With none, every lookup fails with `noFamilies`.
    ///   - eventLoop: where to complete the futures of queries made off any event loop. NIO makes its queries on the
    ///     connection's event loop, and they are completed there; nil: `MultiThreadedEventLoopGroup.singleton`.
    ///   - logger: where each lookup's outcome is logged, at debug level.
    public init(
        resolver: HostResolver,
        families: AddressFamilies = .all,
        eventLoop: (any EventLoop)? = nil,
        logger: Logger = Logger(label: "httpdns.nio")
    ) {
        self.resolver = resolver
        self.families = families
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// The IPv4 addresses of `host`, each with `port`; empty when the answer has none.
    public func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        query(.ipv4, host: host, port: port)
    }

    /// The IPv6 addresses of `host`, each with `port`; empty when the answer has none.
    public func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        query(.ipv6, host: host, port: port)
    }

    /// Fails every query still waiting for its lookup with ``HTTPDNSNIOResolverError/Code/cancelled``, at once, and
    /// cancels the lookups. NIO calls it when it no longer needs the answers: the connection was made before both
    /// were in, or its attempt timed out. A lookup cancelled while the trusted source was being asked still fills
    /// that source's cache when it finishes.
    public func cancelQueries() {
        let cancelled = state.withLock { state in
            let pending = state.lookups.values.filter { $0.outcome == nil }
            state.lookups.removeAll()
            state.current = nil
            return pending
        }
        for lookup in cancelled {
            lookup.task?.cancel()
            for waiter in lookup.waiters {
                waiter.promise.fail(
                    HTTPDNSNIOResolverError(.cancelled, host: waiter.host, reason: "the connection attempt no longer needs the answer")
                )
            }
        }
    }

    // MARK: - Queries

    /// A query waiting for its lookup.
    private struct Waiter: Sendable {
        let family: AddressFamily
        let host: String
        let port: Int
        let promise: EventLoopPromise<[SocketAddress]>
    }

    /// One `HostResolver` lookup and the queries it answers: at most one per family.
    private struct Lookup: Sendable {
        let host: HostName
        /// The families whose query has joined.
        var joined: AddressFamilies
        /// Set when the lookup ended and a query of another family may still join.
        var outcome: Result<HostResolver.Answer, any Error>?
        var waiters: [Waiter]
        var task: Task<Void, Never>?
    }

    private struct State: Sendable {
        /// Lookups in flight, and the ``current`` one once it has ended.
        var lookups: [UInt64: Lookup] = [:]
        /// The lookup that a query for the same host and a family it has not served yet joins.
        var current: UInt64?
        var nextID: UInt64 = 0
    }

    private enum Step {
        case joined
        case answered(Result<HostResolver.Answer, any Error>)
        case start(UInt64)
    }

    private func query(_ family: AddressFamily, host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? eventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
        guard (0...65535).contains(port) else {
            return loop.makeFailedFuture(
                HTTPDNSNIOResolverError(.invalidPort, host: host, reason: "port \(port) is not between 0 and 65535")
            )
        }
        if let literal = Self.addressLiteral(host) {
            return loop.makeSucceededFuture(literal.family == family ? [Self.socketAddress(literal, host: host, port: port)] : [])
        }
        let name: HostName
        do {
            name = try HostName(host)
        } catch {
            return loop.makeFailedFuture(error)
        }
        guard !families.isEmpty else {
            return loop.makeFailedFuture(ResolutionError(.noFamilies, "no address family was asked for to resolve \(name)"))
        }
        let asked = AddressFamilies(family)
        guard families.contains(asked) else { return loop.makeSucceededFuture([]) }

        let waiter = Waiter(family: family, host: host, port: port, promise: loop.makePromise())
        let families = self.families
        let step = state.withLock { state -> Step in
            if let id = state.current, var lookup = state.lookups[id], lookup.host == name, !lookup.joined.contains(asked) {
                lookup.joined.insert(asked)
                if lookup.joined == families { state.current = nil }
                if let outcome = lookup.outcome {
                    state.lookups[id] = state.current == nil ? nil : lookup
                    return .answered(outcome)
                }
                lookup.waiters.append(waiter)
                state.lookups[id] = lookup
                return .joined
            }
            // A lookup of its own; one that has ended is let go once nothing can join it.
            if let id = state.current, state.lookups[id]?.outcome != nil { state.lookups[id] = nil }
            let id = state.nextID
            state.nextID += 1
            state.lookups[id] = Lookup(host: name, joined: asked, outcome: nil, waiters: [waiter], task: nil)
            state.current = asked == families ? nil : id
            return .start(id)
        }
        switch step {
        case .joined:
            break
        case .answered(let outcome):
            Self.complete(waiter, outcome)
        case .start(let id):
            start(id, name)
        }
        return waiter.promise.futureResult
    }

    /// Starts lookup `id`: answered at once from the trusted source's cache when it can be, else by a task.
    private func start(_ id: UInt64, _ name: HostName) {
        do {
            if let answer = try resolver.cachedAnswer(name, families: families) {
                finish(id, .success(answer))
                return
            }
        } catch {
            finish(id, .failure(error))
            return
        }
        let task = Task { [resolver, families] in
            let outcome: Result<HostResolver.Answer, any Error>
            do {
                outcome = .success(try await resolver.resolve(name, families: families))
            } catch {
                outcome = .failure(error)
            }
            self.finish(id, outcome)
        }
        let stillWanted = state.withLock { state in
            guard state.lookups[id]?.outcome == nil, state.lookups[id] != nil else { return false }
            state.lookups[id]?.task = task
            return true
        }
        if !stillWanted { task.cancel() }
    }

    /// Lookup `id` ended: answers its queries, and keeps the outcome for a query that may still join.
    private func finish(_ id: UInt64, _ outcome: Result<HostResolver.Answer, any Error>) {
        let waiters = state.withLock { state -> [Waiter] in
            // Cancelled meanwhile: its queries have failed already.
            guard var lookup = state.lookups[id], lookup.outcome == nil else { return [] }
            let waiters = lookup.waiters
            if state.current == id {
                lookup.outcome = outcome
                lookup.task = nil
                lookup.waiters = []
                state.lookups[id] = lookup
            } else {
                state.lookups[id] = nil
            }
            return waiters
        }
        if let host = waiters.first?.host {
            switch outcome {
            case .success(let answer):
                logger.debug(
                    "resolved for a connection",
                    metadata: [
                        "httpdns.host": "\(host)", "httpdns.source": "\(answer.source)", "httpdns.fallback": "\(answer.fallback)",
                        "httpdns.addresses": "\(answer.resolution.addresses.count)",
                    ]
                )
            case .failure(let error):
                logger.debug("could not resolve for a connection", metadata: ["httpdns.host": "\(host)", "error": "\(error)"])
            }
        }
        for waiter in waiters { Self.complete(waiter, outcome) }
    }

    private static func complete(_ waiter: Waiter, _ outcome: Result<HostResolver.Answer, any Error>) {
        switch outcome {
        case .success(let answer):
            let addresses: [IPAddress] =
                switch waiter.family {
                case .ipv4: answer.resolution.ipv4.map(IPAddress.v4)
                case .ipv6: answer.resolution.ipv6.map(IPAddress.v6)
                }
            waiter.promise.succeed(addresses.map { socketAddress($0, host: waiter.host, port: waiter.port) })
        case .failure(let error):
            waiter.promise.fail(error)
        }
    }

    /// `host` as an IPv4 or IPv6 address, when it is one. A string with a NUL byte is none (the C parser would stop
    /// there, and read `127.0.0.1\0…` as `127.0.0.1`).
    static func addressLiteral(_ host: String) -> IPAddress? {
        guard !host.utf8.contains(0) else { return nil }
        return IPAddress(host)
    }

    /// `address` with `port`, which is in range.
    static func socketAddress(_ address: IPAddress, host: String, port: Int) -> SocketAddress {
        switch address {
        case .v4(let v4):
            var raw = sockaddr_in()
            raw.sin_family = sa_family_t(AF_INET)
            raw.sin_port = in_port_t(port).bigEndian
            raw.sin_addr = v4.inAddr
            return SocketAddress(raw, host: host)
        case .v6(let v6):
            var raw = sockaddr_in6()
            raw.sin6_family = sa_family_t(AF_INET6)
            raw.sin6_port = in_port_t(port).bigEndian
            raw.sin6_addr = v6.in6Addr
            return SocketAddress(raw, host: host)
        }
    }
}
