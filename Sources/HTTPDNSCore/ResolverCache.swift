import Logging
import Synchronization

/// A TTL cache in front of one ``ResolutionSource``, built to sit on the hot path of every request.
///
/// - Answers are kept for their TTL within ``Configuration/minTTLSeconds`` and ``Configuration/maxTTLSeconds``;
///   negative answers (NXDOMAIN, no data) are cached too, with their own clamps.
/// - At most ``Configuration/maxEntries`` entries, one per name and address family; the least recently used goes.
/// - However many callers miss on a name at once, one upstream query is made (per name and family set); the
///   number of queries in flight is bounded by ``Configuration/maxPendingQueries``.
/// - Serve-stale (RFC 8767): when refreshing an expired entry fails, the expired answer is served with
///   ``Configuration/staleAnswerTTLSeconds``, for at most ``Configuration/maxStaleSeconds`` past its expiry.
/// - Refresh-ahead: an entry used in the last ``Configuration/refreshAheadFraction`` of its TTL is refreshed in the
///   background; the caller is answered from the cache at once.
/// - Time comes from a ``MonotonicClock``, so changes to the wall clock neither freeze nor expire entries.
public final class ResolverCache: Sendable {
    /// The cache's settings, as given at creation.
    public let configuration: Configuration
    /// The source asked on a miss.
    public let source: any ResolutionSource

    private let clock: any MonotonicClock
    private let logger: Logger
    private let metrics = ResolverMetrics()
    private let state: Mutex<State>

    /// Makes a cache in front of `source`.
    public init(
        source: any ResolutionSource,
        configuration: Configuration = Configuration(),
        clock: any MonotonicClock = SystemMonotonicClock(),
        logger: Logger = Logger(label: "httpdns.cache")
    ) {
        precondition(configuration.maxEntries > 0, "maxEntries must be positive")
        precondition(configuration.maxPendingQueries > 0, "maxPendingQueries must be positive")
        precondition(configuration.minTTLSeconds <= configuration.maxTTLSeconds, "minTTLSeconds exceeds maxTTLSeconds")
        precondition(
            configuration.minNegativeTTLSeconds <= configuration.maxNegativeTTLSeconds,
            "minNegativeTTLSeconds exceeds maxNegativeTTLSeconds"
        )
        self.source = source
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.state = Mutex(State(upstreamDescription: source.upstreamDescription))
    }

    /// The addresses of `host` in `families`, from the cache when it can, else from the source.
    ///
    /// A stale answer (``Resolution/stale``) is always returned, never thrown: a stale negative answer comes back
    /// as a resolution without addresses, as the HTTPDNS wire format serves it.
    ///
    /// - Throws: ``ResolutionError`` — ``ResolutionError/Code/nameNotFound`` and ``ResolutionError/Code/noAddress``
    ///   for fresh negative answers (with the TTL they may be cached for), the source's error when it failed and nothing
    ///   could be served stale, ``ResolutionError/Code/tooManyPendingQueries`` when the pending bound is reached;
    ///   `CancellationError` when the calling task is cancelled while waiting (the upstream query goes on for
    ///   any other callers and fills the cache).
    public func resolve(_ host: HostName, families: AddressFamilies = .all) async throws -> Resolution {
        precondition(!families.isEmpty, "resolve needs at least one address family")
        let key = FlightKey(host: host, families: families)
        let now = clock.now()
        let fast = state.withLock { state in
            state.answerFromCache(key, now: now, configuration: configuration)
        }
        switch fast {
        case .fresh(let result, let startedRefresh):
            if startedRefresh { launch(key) }
            switch result {
            case .success(let resolution):
                metrics.hits.increment()
                return resolution
            case .failure(let error):
                metrics.negativeHits.increment()
                throw error
            }
        case .stale(let resolution):
            metrics.staleHits.increment()
            return resolution
        case .upstream:
            return try await resolveUpstream(key)
        }
    }

    /// Resolves every host in `hosts` (for example at start-up, so the first requests hit the cache).
    /// - Returns: the hosts that failed, with their errors.
    @discardableResult
    public func preResolve(_ hosts: [HostName], families: AddressFamilies = .all) async -> [HostName: ResolutionError] {
        await withTaskGroup(of: (HostName, ResolutionError?).self) { group in
            for host in hosts {
                group.addTask {
                    do {
                        _ = try await self.resolve(host, families: families)
                        return (host, nil)
                    } catch let error as ResolutionError {
                        return (host, error.code.isNegativeAnswer ? nil : error)
                    } catch {
                        return (host, ResolutionError(.internalError, "\(error)"))
                    }
                }
            }
            var failures: [HostName: ResolutionError] = [:]
            for await (host, error) in group {
                if let error { failures[host] = error }
            }
            return failures
        }
    }

    /// Forgets everything known about `host`; the next lookup asks upstream.
    public func flush(_ host: HostName) {
        let entries = state.withLock { state in
            for family in AddressFamily.allCases {
                state.storage.remove(EntryKey(host: host, family: family))
            }
            return state.storage.count
        }
        metrics.entries.record(entries)
    }

    /// Forgets every entry, for example after a network change. Queries in flight still complete and are stored.
    public func flushAll() {
        state.withLock { $0.storage.removeAll() }
        metrics.entries.record(0)
    }

    /// What the cache has done so far.
    public var stats: ResolverStats {
        state.withLock { state in
            var stats = state.stats
            stats.entries = state.storage.count
            stats.pendingQueries = state.flights.count
            return stats
        }
    }

    // MARK: - Upstream

    private func resolveUpstream(_ key: FlightKey) async throws -> Resolution {
        let waiterID = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        var launchFlight = false
        var lateOutcome: CacheOutcome?
        let outcome: Result<Resolution, ResolutionError> = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let join: JoinOutcome = state.withLock { state in
                    // The cache may have been filled since the fast path looked.
                    let now = clock.now()
                    let outcome = state.answerFromCache(key, now: now, configuration: configuration)
                    if case .upstream = outcome {
                    } else {
                        return .answered(outcome)
                    }
                    if Task.isCancelled { return .cancelled }
                    if state.flights[key] != nil {
                        state.flights[key]!.waiters[waiterID] = continuation
                        state.stats.coalescedLookups += 1
                        return .joined
                    }
                    guard state.flights.count < configuration.maxPendingQueries else {
                        state.stats.rejectedLookups += 1
                        return .rejected(state.flights.count)
                    }
                    state.flights[key] = Flight(waiters: [waiterID: continuation])
                    return .started
                }
                switch join {
                case .answered(let outcome):
                    lateOutcome = outcome
                    continuation.resume(returning: .failure(ResolutionError(.internalError, "answered from cache")))
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                case .joined:
                    // Counted when joining, as the stats count it: whatever the flight delivers (a stale answer
                    // too) and even if this caller is cancelled before it does.
                    metrics.coalesced.increment()
                case .started:
                    launchFlight = true
                case .rejected(let pending):
                    continuation.resume(
                        returning: .failure(
                            ResolutionError(
                                .tooManyPendingQueries,
                                "\(pending) upstream queries are already pending (maxPendingQueries); not asking for \(key.host)"
                            )
                        )
                    )
                }
                if launchFlight { launch(key) }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                state.flights[key]?.waiters.removeValue(forKey: waiterID)
            }
            continuation?.resume(throwing: CancellationError())
        }

        if let lateOutcome {
            switch lateOutcome {
            case .fresh(let result, let startedRefresh):
                if startedRefresh { launch(key) }
                if case .success = result { metrics.hits.increment() } else { metrics.negativeHits.increment() }
                return try result.get()
            case .stale(let resolution):
                metrics.staleHits.increment()
                return resolution
            case .upstream:
                preconditionFailure("the slow path answers from the cache only when it can")
            }
        }
        switch outcome {
        case .success(let resolution) where resolution.stale:
            metrics.staleHits.increment()
        case .failure(let error) where error.code == .tooManyPendingQueries:
            metrics.rejected.increment()
        default:
            metrics.misses.increment()
        }
        return try outcome.get()
    }

    /// Starts the upstream query for `key`, whose flight is already registered.
    private func launch(_ key: FlightKey) {
        Task {
            let started = clock.now()
            let result: Result<SourceAnswer, ResolutionError>
            do {
                result = .success(try await source.query(key.host, families: key.families))
            } catch let error as ResolutionError {
                result = .failure(error)
            } catch {
                result = .failure(ResolutionError(.internalError, "\(source.name) failed: \(error)"))
            }
            let finished = clock.now()
            complete(key, with: result, now: finished, startedAt: started)
        }
    }

    private func complete(
        _ key: FlightKey,
        with result: Result<SourceAnswer, ResolutionError>,
        now: MonotonicInstant,
        startedAt: MonotonicInstant
    ) {
        let outcomeName: String
        switch result {
        case .success(let answer): outcomeName = Self.outcomeName(of: answer)
        case .failure(let error): outcomeName = error.code.description
        }
        let (waiters, delivered, evicted, entries) = state.withLock { state in
            let flight = state.flights.removeValue(forKey: key)
            state.stats.upstreamQueries[ResolverStats.UpstreamOutcome(source: source.name, outcome: outcomeName), default: 0] += 1
            var evicted = 0
            let delivered: Result<Resolution, ResolutionError>
            switch result {
            case .success(let answer):
                state.store(answer, for: key.host, source: source.name, now: now, configuration: configuration)
                delivered = state.resolutionAfterUpstream(key, now: now, configuration: configuration)
                    ?? .failure(ResolutionError(.malformedAnswer, "\(source.name) did not answer every family asked for \(key.host)"))
                // Evict only once the answer is assembled: with fewer entries allowed than families asked, the
                // entries just stored may themselves be the least recently used.
                evicted = state.evictOverflow(configuration: configuration)
            case .failure(let error):
                state.postponeRefreshAhead(key, now: now, configuration: configuration)
                delivered = state.staleAfterFailure(key, now: now, configuration: configuration) ?? .failure(error)
            }
            let waiters = flight?.waiters ?? [:]
            if case .success(let resolution) = delivered, resolution.stale {
                state.stats.staleHits += waiters.count
            } else {
                state.stats.misses += waiters.count
            }
            return (waiters, delivered, evicted, state.storage.count)
        }
        metrics.recordUpstream(source: source.name, outcome: outcomeName, nanoseconds: now.nanoseconds &- startedAt.nanoseconds)
        if evicted > 0 { metrics.evictions.increment(by: evicted) }
        metrics.entries.record(entries)
        if case .failure(let error) = result {
            logger.debug(
                "upstream query failed",
                metadata: ["dns.source": "\(source.name)", "dns.outcome": "\(outcomeName)", "error": "\(error.message)"]
            )
        }
        for continuation in waiters.values {
            continuation.resume(returning: delivered)
        }
    }

    private static func outcomeName(of answer: SourceAnswer) -> String {
        func isPositive<A>(_ family: FamilyAnswer<A>?) -> Bool {
            if case .addresses = family { return true }
            return false
        }
        func isNameNotFound<A>(_ family: FamilyAnswer<A>?) -> Bool {
            if case .negative(.nameNotFound, _) = family { return true }
            return false
        }
        if isPositive(answer.ipv4) || isPositive(answer.ipv6) { return "success" }
        if isNameNotFound(answer.ipv4) || isNameNotFound(answer.ipv6) { return ResolutionError.Code.nameNotFound.description }
        return ResolutionError.Code.noAddress.description
    }
}

// MARK: - State

extension ResolverCache {
    /// One name and family set whose upstream query is in flight.
    struct FlightKey: Hashable, Sendable {
        let host: HostName
        let families: AddressFamilies
    }

    /// One cache entry: one name and one family.
    struct EntryKey: Hashable, Sendable {
        let host: HostName
        let family: AddressFamily
    }

    struct Flight {
        var waiters: [UInt64: CheckedContinuation<Result<Resolution, ResolutionError>, any Error>]
    }

    enum EntryValue {
        case ipv4([IPv4Address])
        case ipv6([IPv6Address])
        case negative(NegativeAnswer)
    }

    struct Entry {
        var value: EntryValue
        var originTTLSeconds: UInt32
        var expiresAt: MonotonicInstant
        var refreshAt: MonotonicInstant
        var source: String
        /// When a refresh of this expired entry last failed.
        var refreshFailedAt: MonotonicInstant?
    }

    enum CacheOutcome {
        /// Fresh entries answer the lookup; `startedRefresh` says a refresh-ahead flight was registered.
        case fresh(Result<Resolution, ResolutionError>, startedRefresh: Bool)
        /// Expired entries answer the lookup because a refresh failed recently.
        case stale(Resolution)
        /// Upstream must be asked.
        case upstream
    }

    enum JoinOutcome {
        case answered(CacheOutcome)
        case cancelled
        case joined
        case started
        case rejected(Int)
    }

    struct State {
        /// Names the upstream in the messages of negative answers.
        let upstreamDescription: String
        var storage = LRUStorage<EntryKey, Entry>()
        var flights: [FlightKey: Flight] = [:]
        var stats = ResolverStats()
        var nextWaiterID: UInt64 = 0

        /// The hot path: answers `key` from fresh entries, or from stale ones while refreshing fails.
        mutating func answerFromCache(_ key: FlightKey, now: MonotonicInstant, configuration: Configuration) -> CacheOutcome {
            var slots: (Int?, Int?) = (nil, nil)
            var anyExpired = false
            var allRecentlyFailed = true
            var refreshDue = false
            for family in key.families.members {
                let entryKey = EntryKey(host: key.host, family: family)
                guard let slot = storage.slot(of: entryKey) else { return .upstream }
                let entry = storage.value(at: slot)
                if entry.expiresAt <= now {
                    guard configuration.maxStaleSeconds > 0, now < entry.expiresAt.adding(seconds: configuration.maxStaleSeconds) else {
                        storage.remove(entryKey)
                        return .upstream
                    }
                    anyExpired = true
                    if let failed = entry.refreshFailedAt, now < failed.adding(seconds: configuration.staleRefreshRetrySeconds) {
                    } else {
                        allRecentlyFailed = false
                    }
                } else if now >= entry.refreshAt {
                    refreshDue = true
                }
                storage.touch(slot)
                if family == .ipv4 { slots.0 = slot } else { slots.1 = slot }
            }
            if anyExpired {
                guard allRecentlyFailed else { return .upstream }
                stats.staleHits += 1
                return .stale(staleResolution(key, slots: slots, now: now, configuration: configuration))
            }
            let result = assemble(key.host, slots: slots, now: now, cached: true)
            if case .success = result { stats.hits += 1 } else { stats.negativeHits += 1 }
            var startedRefresh = false
            if refreshDue, case .success = result, flights[key] == nil, flights.count < configuration.maxPendingQueries {
                flights[key] = Flight(waiters: [:])
                startedRefresh = true
            }
            return .fresh(result, startedRefresh: startedRefresh)
        }

        /// Stores what the source said for each family, clamping TTLs. The size bound is restored by
        /// ``evictOverflow(configuration:)``.
        mutating func store(_ answer: SourceAnswer, for host: HostName, source: String, now: MonotonicInstant, configuration: Configuration) {
            if let ipv4 = answer.ipv4 {
                store(ipv4, wrap: EntryValue.ipv4, key: EntryKey(host: host, family: .ipv4), source: source, now: now, configuration: configuration)
            }
            if let ipv6 = answer.ipv6 {
                store(ipv6, wrap: EntryValue.ipv6, key: EntryKey(host: host, family: .ipv6), source: source, now: now, configuration: configuration)
            }
        }

        /// Evicts the least recently used entries past ``Configuration/maxEntries``. Returns how many went.
        mutating func evictOverflow(configuration: Configuration) -> Int {
            var evicted = 0
            while storage.count > configuration.maxEntries, storage.removeOldest() != nil {
                evicted += 1
            }
            stats.evictions += evicted
            return evicted
        }

        private mutating func store<A>(
            _ answer: FamilyAnswer<A>,
            wrap: ([A]) -> EntryValue,
            key: EntryKey,
            source: String,
            now: MonotonicInstant,
            configuration: Configuration
        ) {
            let value: EntryValue
            let ttl: UInt32
            var refreshAfter: UInt32
            switch answer {
            case .addresses(let addresses, let ttlSeconds):
                value = wrap(addresses)
                ttl = min(max(ttlSeconds, configuration.minTTLSeconds), configuration.maxTTLSeconds)
                let lead = Double(ttl) * min(max(configuration.refreshAheadFraction, 0), 1)
                refreshAfter = configuration.refreshAheadFraction > 0 ? ttl - UInt32(lead.rounded(.down)) : ttl
            case .negative(let kind, let ttlSeconds):
                value = .negative(kind)
                ttl = min(
                    max(ttlSeconds ?? configuration.negativeTTLSeconds, configuration.minNegativeTTLSeconds),
                    configuration.maxNegativeTTLSeconds
                )
                refreshAfter = ttl
            }
            storage.set(
                Entry(
                    value: value,
                    originTTLSeconds: ttl,
                    expiresAt: now.adding(seconds: ttl),
                    refreshAt: now.adding(seconds: refreshAfter),
                    source: source,
                    refreshFailedAt: nil
                ),
                for: key
            )
        }

        /// The answer for the waiters of a flight that just stored its answer.
        mutating func resolutionAfterUpstream(_ key: FlightKey, now: MonotonicInstant, configuration: Configuration) -> Result<Resolution, ResolutionError>? {
            guard let slots = freshSlots(key, now: now) else { return nil }
            return assemble(key.host, slots: slots, now: now, cached: false)
        }

        /// After a failed refresh of fresh entries, waits ``Configuration/staleRefreshRetrySeconds`` before the
        /// next refresh-ahead, so hits on a name whose upstream fails fast do not become a stream of queries.
        mutating func postponeRefreshAhead(_ key: FlightKey, now: MonotonicInstant, configuration: Configuration) {
            for family in key.families.members {
                guard let slot = storage.slot(of: EntryKey(host: key.host, family: family)) else { continue }
                storage.modify(at: slot) { entry in
                    guard now < entry.expiresAt else { return }
                    entry.refreshAt = min(entry.expiresAt, now.adding(seconds: configuration.staleRefreshRetrySeconds))
                }
            }
        }

        /// After a failed refresh: the stale answer, if every family has an entry within the staleness limit.
        mutating func staleAfterFailure(_ key: FlightKey, now: MonotonicInstant, configuration: Configuration) -> Result<Resolution, ResolutionError>? {
            guard configuration.maxStaleSeconds > 0 else { return nil }
            var slots: (Int?, Int?) = (nil, nil)
            for family in key.families.members {
                guard let slot = storage.slot(of: EntryKey(host: key.host, family: family)) else { return nil }
                let entry = storage.value(at: slot)
                guard now < entry.expiresAt.adding(seconds: configuration.maxStaleSeconds) else { return nil }
                if family == .ipv4 { slots.0 = slot } else { slots.1 = slot }
            }
            var anyExpired = false
            for slot in [slots.0, slots.1].compactMap({ $0 }) where storage.value(at: slot).expiresAt <= now {
                anyExpired = true
                storage.modify(at: slot) { $0.refreshFailedAt = now }
            }
            // A failed refresh-ahead of a still-fresh entry changes nothing for its callers.
            guard anyExpired else { return assemble(key.host, slots: slots, now: now, cached: true) }
            return .success(staleResolution(key, slots: slots, now: now, configuration: configuration))
        }

        private func freshSlots(_ key: FlightKey, now: MonotonicInstant) -> (Int?, Int?)? {
            var slots: (Int?, Int?) = (nil, nil)
            for family in key.families.members {
                guard let slot = storage.slot(of: EntryKey(host: key.host, family: family)) else { return nil }
                if family == .ipv4 { slots.0 = slot } else { slots.1 = slot }
            }
            return slots
        }

        private func staleResolution(_ key: FlightKey, slots: (Int?, Int?), now: MonotonicInstant, configuration: Configuration) -> Resolution {
            var resolution: Resolution
            switch assemble(key.host, slots: slots, now: now, cached: true) {
            case .success(let assembled):
                resolution = assembled
            case .failure:
                // A stale negative answer is served as what it was: no addresses.
                resolution = Resolution(host: key.host, ipv4: [], ipv6: [], ttlSeconds: 0, originTTLSeconds: 0, source: "", cached: true, stale: true)
                if let slot = slots.0 ?? slots.1 { resolution.source = storage.value(at: slot).source }
            }
            resolution.ttlSeconds = configuration.staleAnswerTTLSeconds
            resolution.stale = true
            return resolution
        }

        /// Combines the entries in `slots` into one answer: addresses if any family has some, else the negative
        /// answer (NXDOMAIN wins over no data).
        private func assemble(_ host: HostName, slots: (Int?, Int?), now: MonotonicInstant, cached: Bool) -> Result<Resolution, ResolutionError> {
            var ipv4: [IPv4Address] = []
            var ipv6: [IPv6Address] = []
            var ttl = UInt32.max
            var originTTL = UInt32.max
            var source = ""
            var negative: NegativeAnswer?
            var positive = false
            for slot in [slots.0, slots.1] {
                guard let slot else { continue }
                let entry = storage.value(at: slot)
                ttl = min(ttl, now.secondsUntil(entry.expiresAt))
                originTTL = min(originTTL, entry.originTTLSeconds)
                source = entry.source
                switch entry.value {
                case .ipv4(let addresses):
                    ipv4 = addresses
                    positive = true
                case .ipv6(let addresses):
                    ipv6 = addresses
                    positive = true
                case .negative(let kind):
                    if negative != .nameNotFound { negative = kind }
                }
            }
            if !positive {
                let families = slots.0 != nil && slots.1 != nil ? "A or AAAA" : (slots.0 != nil ? "A" : "AAAA")
                switch negative ?? .noData {
                case .nameNotFound:
                    return .failure(ResolutionError(.nameNotFound, "\(host) does not exist (NXDOMAIN from \(upstreamDescription))", ttlSeconds: ttl))
                case .noData:
                    return .failure(ResolutionError(.noAddress, "\(host) exists but has no \(families) address (NOERROR, no data from \(upstreamDescription))", ttlSeconds: ttl))
                }
            }
            return .success(
                Resolution(host: host, ipv4: ipv4, ipv6: ipv6, ttlSeconds: ttl, originTTLSeconds: originTTL, source: source, cached: cached, stale: false)
            )
        }
    }
}
