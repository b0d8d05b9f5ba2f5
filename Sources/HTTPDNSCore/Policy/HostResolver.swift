import Logging
import Metrics
import Synchronization

/// The resolution policy: a trusted source first, and the local resolvers only when it fails, their answers judged
/// by the ``HijackGuard``.
///
/// - The trusted source (an HTTPDNS service, in `HTTPDNSClient`) is asked through a cache of its own. Its answers,
///   negative ones included, are final.
/// - When it fails, the fallbacks are asked in order (c-ares to chosen servers, then the system resolver), each
///   through a cache of its own, and each step is counted in `httpdns_fallbacks_total{from,to}`.
/// - A fallback's fresh answer is judged before its cache keeps it: one the guard calls `hijacked` is refused
///   (`rejectedByGuard`) and never cached, and the next fallback is asked. Every verdict that is not `ok` is counted
///   in `httpdns_hijack_suspected_total{reason}`.
/// - A `strict` host never uses a fallback: when the trusted source fails, so does the lookup (reason `downgrade`).
/// - Every cache rule applies to every source: single flight, serve-stale, refresh-ahead, stats.
public final class HostResolver: Sendable {
    public struct Configuration: Sendable {
        /// Hosts that must only be resolved by the trusted source. Default none.
        public var strictHosts = HostPatterns()
        /// The guard's rules.
        public var guardConfiguration = HijackGuard.Configuration()
        /// The settings of each source's cache.
        public var cache = ResolverCache.Configuration()

        public init() {}
    }

    /// An answer, with where it came from and what the guard made of it.
    public struct Answer: Sendable {
        public let resolution: Resolution
        /// Whether a fallback answered, the trusted source having failed.
        public let fallback: Bool
        /// `ok` for the trusted source's answers; the guard's verdict for a fallback's.
        public let verdict: HijackVerdict

        /// The name of the source that answered.
        public var source: String { resolution.source }

        public init(resolution: Resolution, fallback: Bool, verdict: HijackVerdict) {
            self.resolution = resolution
            self.fallback = fallback
            self.verdict = verdict
        }
    }

    public let configuration: Configuration
    /// The trusted source's cache.
    public let trusted: ResolverCache
    /// The fallbacks' caches, in the order they are asked.
    public let fallbacks: [ResolverCache]
    private let hijackGuard: HijackGuard
    private let logger: Logger
    private let fallbackCounters: [Counter]
    private let downgrades: Counter
    private let networkChanges = Counter(label: "httpdns_network_changes_total")
    /// Set once by ``shutdown()``: lookups are refused from then on, the caches' answers and the fallbacks included.
    let isShutDown = Atomic<Bool>(false)

    /// - Throws: ``ConfigurationError`` when a cache configuration does not validate.
    public init(
        trusted trustedSource: any ResolutionSource,
        fallbacks fallbackSources: [any ResolutionSource],
        configuration: Configuration = Configuration(),
        clock: any MonotonicClock = SystemMonotonicClock(),
        logger: Logger = Logger(label: "httpdns.resolver")
    ) throws(ConfigurationError) {
        self.configuration = configuration
        self.logger = logger
        let hijackGuard = HijackGuard(configuration: configuration.guardConfiguration)
        self.hijackGuard = hijackGuard
        let trusted = try ResolverCache(source: trustedSource, configuration: configuration.cache, clock: clock, logger: logger)
        self.trusted = trusted
        fallbacks = try fallbackSources.map { source throws(ConfigurationError) in
            try ResolverCache(
                source: GuardedSource(source, guard: hijackGuard, trusted: trusted),
                configuration: configuration.cache,
                clock: clock,
                logger: logger
            )
        }
        fallbackCounters = fallbackSources.map { source in
            Counter(label: "httpdns_fallbacks_total", dimensions: [("from", trustedSource.name), ("to", source.name)])
        }
        downgrades = HijackVerdict.Reason.downgrade.counter
        // Every reason's series from the start, at zero: an alert on `increase()` cannot see a series' first event,
        // so a first hijack would otherwise go unalerted.
        for reason in HijackVerdict.Reason.all where reason != .none && reason != .downgrade { _ = reason.counter }
    }

    /// The addresses of `host`: the trusted source's, or, when it fails and the host is not strict, the first
    /// fallback's that the guard lets through.
    /// - Throws: ``ResolutionError``: a negative answer (from whichever source answered), the trusted source's
    ///   failure for a strict host, or, when every source failed, `rejectedByGuard` with its verdict if the guard
    ///   refused an answer, else the last failure's code, with every source's reason in the message.
    nonisolated(nonsending) public func resolve(_ host: HostName, families: AddressFamilies = .all) async throws -> Answer {
        let trustedFailure: ResolutionError
        do {
            // A hit is answered without suspending: no async call on the hot path.
            if let cached = try cachedAnswer(host, families: families) { return cached }
            return Answer(resolution: try await trusted.resolve(host, families: families), fallback: false, verdict: .ok)
        } catch let error as ResolutionError where !error.code.isNegativeAnswer {
            trustedFailure = error
        }
        return try await fallBack(host, families: families, trustedFailure: trustedFailure)
    }

    /// What the trusted source's cache can answer for `host` right now, without waiting: for callers that must not
    /// suspend on a hit. Returns a fresh or stale answer, throws a fresh negative one (final, as in
    /// ``resolve(_:families:)``), and returns nil when the lookup must wait: follow a nil with `resolve`.
    public func cachedAnswer(_ host: HostName, families: AddressFamilies = .all) throws -> Answer? {
        if isShutDown.load(ordering: .relaxed) { throw Self.shutDownError(host) }
        return try trusted.cachedResolution(host, families: families).map { Answer(resolution: $0, fallback: false, verdict: .ok) }
    }

    static func shutDownError(_ host: HostName) -> ResolutionError {
        ResolutionError(.shutdown, "the resolver was shut down; \(host) was not looked up")
    }

    /// The fallbacks' turn, the trusted source having failed with `trustedFailure`.
    private func fallBack(_ host: HostName, families: AddressFamilies, trustedFailure: ResolutionError) async throws -> Answer {
        // A resolver (or a trusted source) that was shut down answers nothing, not the local resolver's answer; nor
        // does one shut down while its trusted source was being asked (the source's failure then reads as a
        // connection's, not as a shutdown).
        if trustedFailure.code == .shutdown { throw trustedFailure }
        if isShutDown.load(ordering: .relaxed) { throw Self.shutDownError(host) }
        guard !configuration.strictHosts.matches(host) else {
            downgrades.increment()
            throw ResolutionError(
                trustedFailure.code,
                "\(host) may only be resolved by \(trusted.source.name), which failed: \(trustedFailure.message)"
            )
        }
        var lastFailure = trustedFailure
        var refusal: ResolutionError?
        var failures = ["\(trusted.source.name): \(trustedFailure.message)"]
        for (index, fallback) in fallbacks.enumerated() {
            if isShutDown.load(ordering: .relaxed) { throw Self.shutDownError(host) }
            fallbackCounters[index].increment()
            logger.debug(
                "falling back",
                metadata: ["httpdns.from": "\(trusted.source.name)", "httpdns.to": "\(fallback.source.name)", "error": "\(lastFailure.code)"]
            )
            do {
                let resolution = try await fallback.resolve(host, families: families)
                let verdict = hijackGuard.judge(resolution.addresses, host: host, trusted: GuardedSource.trustedView(trusted, host, families))
                return Answer(resolution: resolution, fallback: true, verdict: verdict)
            } catch let error as ResolutionError where !error.code.isNegativeAnswer {
                lastFailure = error
                if error.code == .rejectedByGuard, refusal == nil { refusal = error }
                failures.append("\(fallback.source.name): \(error.message)")
            } catch let error as ResolutionError {
                // The fallback's answer stands, but the trusted source's failure is what there is to fix: say it.
                let why = "\(fallback.source.name) was asked because the sources before it failed: \(failures.joined(separator: "; "))"
                let message = "\(error.message); \(why)"
                throw ResolutionError(error.code, message, ttlSeconds: error.ttlSeconds, verdict: error.verdict)
            }
        }
        guard !fallbacks.isEmpty else { throw lastFailure }
        // An answer the guard refused is what the lookup ends on, when no source answered: the name may well have
        // an address, just not one to trust. Otherwise the last failure's code. Every source's reason either way.
        let ending = refusal ?? lastFailure
        throw ResolutionError(ending.code, "no source could resolve \(host): \(failures.joined(separator: "; "))", verdict: ending.verdict)
    }

    /// Resolves every host in `hosts` through the policy (for example at start-up, so the first requests hit the
    /// cache), at most `concurrency` requests at a time: the trusted source first, in batches when it takes them
    /// (``ResolverCache/preResolve(_:families:concurrency:)``), then each name it could not resolve through the
    /// fallbacks, judged by the guard as any lookup is.
    /// - Returns: the hosts that no source could resolve, with their errors. Negative answers are answers.
    /// - Throws: ``ConfigurationError`` when `concurrency` is not positive.
    @discardableResult
    public func preResolve(
        _ hosts: [HostName],
        families: AddressFamilies = .all,
        concurrency: Int = 64
    ) async throws(ConfigurationError) -> [HostName: ResolutionError] {
        if isShutDown.load(ordering: .relaxed) {
            return Dictionary(hosts.map { ($0, Self.shutDownError($0)) }) { first, _ in first }
        }
        let unresolved = try await trusted.preResolve(hosts, families: families, concurrency: concurrency)
        guard !unresolved.isEmpty else { return [:] }
        // The trusted source has had its turn for these: straight to the fallbacks.
        return try await BoundedLookups.run(unresolved.keys.map { ($0, families) }, concurrency: concurrency) { host, families in
            _ = try await self.fallBack(host, families: families, trustedFailure: unresolved[host]!)
        }
    }

    /// Call when the network the process is on has changed (an interface or a VPN came or went, the machine moved):
    /// answers learnt there may not hold here, and neither may which service addresses failed.
    ///
    /// Every source is told (``ResolutionSource/networkChanged()``: the service sources count every address healthy
    /// again and open new connections), every cache is emptied, and the names the caches held are resolved again
    /// through the policy, each for the families it was held for (the trusted cache's names first, each cache's
    /// most recently used first), so the requests that follow find them cached. Lookups already in flight still
    /// answer their callers, but nothing joins them and their answers are not stored
    /// (``ResolverCache/flushAll(abandoningQueriesInFlight:)``).
    /// - Returns: the names that could not be resolved again, with their errors.
    /// - Throws: ``ConfigurationError`` when `concurrency` is not positive.
    @discardableResult
    public func networkChanged(concurrency: Int = 64) async throws(ConfigurationError) -> [HostName: ResolutionError] {
        guard concurrency > 0 else {
            throw ConfigurationError(.outOfRange, key: "concurrency", reason: "must be a positive number of lookups at once, not \(concurrency)")
        }
        // Shut down: nothing to tell the sources, no cache to refill.
        guard !isShutDown.load(ordering: .relaxed) else { return [:] }
        // The sources first, so that no lookup from now on uses the old network's connections or health.
        for cache in [trusted] + fallbacks { await cache.source.networkChanged() }
        var inUse: [(host: HostName, families: AddressFamilies)] = []
        var position: [HostName: Int] = [:]
        for cache in [trusted] + fallbacks {
            for entry in cache.entries() {
                let families: AddressFamilies = [entry.ipv4 == nil ? [] : .ipv4, entry.ipv6 == nil ? [] : .ipv6]
                if let index = position[entry.host] {
                    inUse[index].families.formUnion(families)
                } else {
                    position[entry.host] = inUse.count
                    inUse.append((entry.host, families))
                }
            }
            cache.flushAll(abandoningQueriesInFlight: true)
        }
        networkChanges.increment()
        logger.info("network changed: caches emptied, resolving the names in use again", metadata: ["httpdns.names": "\(inUse.count)"])
        var failures: [HostName: ResolutionError] = [:]
        for families in [AddressFamilies.all, .ipv4, .ipv6] {
            let hosts = inUse.filter { $0.families == families }.map(\.host)
            guard !hosts.isEmpty else { continue }
            try await failures.merge(preResolve(hosts, families: families, concurrency: concurrency)) { first, _ in first }
        }
        return failures
    }
}

/// A fallback source whose fresh answers the guard judges before its cache keeps them.
struct GuardedSource: ResolutionSource {
    let base: any ResolutionSource
    let hijackGuard: HijackGuard
    let trusted: ResolverCache

    init(_ base: any ResolutionSource, guard hijackGuard: HijackGuard, trusted: ResolverCache) {
        self.base = base
        self.hijackGuard = hijackGuard
        self.trusted = trusted
    }

    var name: String { base.name }
    var upstreamDescription: String { base.upstreamDescription }

    func networkChanged() async { await base.networkChanged() }

    func shutdown() async { await base.shutdown() }

    func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        let answer = try await base.query(host, families: families)
        var addresses: [IPAddress] = []
        if case .addresses(let v4, _)? = answer.ipv4 { addresses += v4.map(IPAddress.v4) }
        if case .addresses(let v6, _)? = answer.ipv6 { addresses += v6.map(IPAddress.v6) }
        let verdict = hijackGuard.judge(addresses, host: host, trusted: Self.trustedView(trusted, host, families))
        if verdict.level != .ok { verdict.reason.counter.increment() }
        if verdict.level == .hijacked {
            throw ResolutionError(.rejectedByGuard, "\(base.name)'s answer for \(host) was refused: \(verdict)", verdict: verdict)
        }
        return answer
    }

    /// What the trusted source's cache holds for `host`, fresh or stale, without asking it.
    static func trustedView(_ trusted: ResolverCache, _ host: HostName, _ families: AddressFamilies) -> HijackGuard.TrustedView? {
        do {
            guard let resolution = try trusted.cachedResolution(host, families: families) else { return nil }
            if resolution.negativeAnswer == .nameNotFound { return .nameNotFound }
            return resolution.addresses.isEmpty ? nil : .addresses(resolution.addresses)
        } catch let error as ResolutionError where error.code == .nameNotFound {
            return .nameNotFound
        } catch {
            return nil
        }
    }
}

extension HijackVerdict.Reason {
    /// `httpdns_hijack_suspected_total{reason}`.
    var counter: Counter { Counter(label: "httpdns_hijack_suspected_total", dimensions: [("reason", description)]) }
}
