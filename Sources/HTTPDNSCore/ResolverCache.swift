import HTTPDNSSynchronization
import Logging

/// A TTL cache in front of one ``ResolutionSource``, built to sit on the hot path of every request.
///
/// - Answers are kept for their TTL within ``Configuration/minTTL`` and ``Configuration/maxTTL``;
///   negative answers (NXDOMAIN, no data) are cached too, with their own clamps.
/// - At most ``Configuration/maxEntries`` names, each one entry holding its A and AAAA answers; the least
///   recently used name goes.
/// - However many callers miss on a name at once, one upstream query is made (per name and family set); the
///   number of queries in flight is bounded by ``Configuration/maxPendingQueries``.
/// - Serve-stale (RFC 8767): when refreshing an expired entry fails, the expired answer is served with
///   ``Configuration/staleAnswerTTL``, for at most ``Configuration/maxStale`` past its expiry.
/// - Refresh-ahead: an entry used in the last ``Configuration/refreshAheadFraction`` of its TTL is refreshed in the
///   background; the caller is answered from the cache at once.
/// - Time comes from a ``MonotonicClock``, so changes to the wall clock neither freeze nor expire entries.
public final class ResolverCache: Sendable {
    /// The cache's settings, as given at creation.
    public let configuration: Configuration
    /// `configuration` in the integers the hot path uses, worked out once here.
    let limits: Limits
    /// The source asked on a miss.
    public let source: any ResolutionSource

    let clock: any MonotonicClock
    private let logger: Logger
    let metrics: ResolverMetrics
    let state: Mutex<State>
    /// Client response timers asleep (``Configuration/staleAnswerClientTimeout``): each until it answers its
    /// waiter stale, or the waiter is answered or cancelled first.
    package let staleTimersRunning = Atomic<Int>(0)

    /// Makes a cache in front of `source`.
    /// - Throws: ``ConfigurationError`` when `configuration` does not pass ``Configuration/validate()``.
    public init(
        source: any ResolutionSource,
        configuration: Configuration = Configuration(),
        clock: any MonotonicClock = SystemMonotonicClock(),
        logger: Logger = Logger(label: "httpdns.cache")
    ) throws(ConfigurationError) {
        try configuration.validate()
        self.source = source
        self.configuration = configuration
        self.limits = Limits(configuration)
        self.clock = clock
        self.logger = logger
        self.metrics = ResolverMetrics(sourceName: source.name)
        self.state = Mutex(State(sourceName: source.name, upstreamDescription: source.upstreamDescription))
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
    nonisolated(nonsending) public func resolve(_ host: HostName, families: AddressFamilies = .all) async throws -> Resolution {
        if let resolution = try cachedResolution(host, families: families) {
            return resolution
        }
        return try await resolveUpstream(FlightKey(host: host, families: families))
    }

    /// What the cache can answer for `host` right now, without waiting and without asking upstream: for
    /// callers on a path that must not suspend. Returns a fresh or stale answer, throws a fresh negative one
    /// (as ``resolve(_:families:)`` does), and returns nil, counting nothing, when upstream must be asked;
    /// follow a nil with ``resolve(_:families:)``. A hit late in its TTL starts the refresh-ahead here too.
    public func cachedResolution(_ host: HostName, families: AddressFamilies = .all) throws -> Resolution? {
        guard !families.isEmpty else { throw ResolutionError.noFamilies(host) }
        let now = clock.now()
        let outcome = state.withLock { state in
            state.answerFromCache(host, families, now: now, limits: limits)
        }
        return try deliver(outcome, host: host, families: families)
    }

    /// Hands out what the cache answered (counting it), or nil when upstream must be asked.
    private func deliver(_ outcome: consuming CacheOutcome, host: HostName, families: AddressFamilies) throws -> Resolution? {
        switch consume outcome {
        case .hit(let resolution, let refresh):
            metrics.hits.increment()
            if let refresh { launch(FlightKey(host: host, families: families), generation: refresh) }
            return resolution
        case .negative(let error):
            metrics.negativeHits.increment()
            throw error
        case .stale(let resolution):
            metrics.staleHits.increment()
            return resolution
        case .upstream:
            return nil
        }
    }

    /// Resolves every host in `hosts` (for example at start-up, so the first requests hit the cache), at most
    /// `concurrency` names at a time so a long list stays within ``Configuration/maxPendingQueries`` (and within what
    /// the upstream takes at once).
    ///
    /// A ``BatchResolutionSource`` is asked for the names it does not hold fresh in batches of its
    /// ``BatchResolutionSource/maxBatchSize`` (the native API's `/resolve`), so 1,000 names take 200 requests of 5
    /// rather than 1,000; the names of a batch that fails are then asked one by one.
    /// - Returns: the hosts that failed, with their errors. Negative answers are answers, not failures.
    /// - Throws: ``ConfigurationError`` when `concurrency` is not positive.
    @discardableResult
    public func preResolve(
        _ hosts: [HostName],
        families: AddressFamilies = .all,
        concurrency: Int = 64
    ) async throws(ConfigurationError) -> [HostName: ResolutionError] {
        guard let batchSource = source as? any BatchResolutionSource, batchSource.maxBatchSize > 1, !families.isEmpty else {
            return try await BoundedLookups.run(hosts.map { ($0, families) }, concurrency: concurrency) { host, families in
                _ = try await self.resolve(host, families: families)
            }
        }
        guard concurrency > 0 else {
            throw ConfigurationError(.outOfRange, key: "concurrency", reason: "must be a positive number of lookups at once, not \(concurrency)")
        }
        let now = clock.now()
        var seen = Set<HostName>()
        let missing = hosts.filter { host in
            seen.insert(host).inserted && state.withLock { !$0.holdsFresh(host, families, now: now, limits: limits) }
        }
        let batches = stride(from: 0, to: missing.count, by: batchSource.maxBatchSize).map {
            Array(missing[$0..<min($0 + batchSource.maxBatchSize, missing.count)])
        }
        // Each batch as one lookup of BoundedLookups, named by its first host; a batch that fails is asked name by name.
        var unanswered: [HostName] = []
        let firsts = Dictionary(uniqueKeysWithValues: batches.map { ($0[0], $0) })
        // `concurrency` counts names, as it does one name a request: the upstream sees as many lookups at once.
        let batchConcurrency = max(1, concurrency / batchSource.maxBatchSize)
        let failedBatches = try await BoundedLookups.run(batches.map { ($0[0], families) }, concurrency: batchConcurrency) { first, families in
            try await self.storeBatch(firsts[first]!, families: families, from: batchSource)
        }
        for first in failedBatches.keys { unanswered += firsts[first]! }
        guard !unanswered.isEmpty else { return [:] }
        return try await BoundedLookups.run(unanswered.map { ($0, families) }, concurrency: concurrency) { host, families in
            _ = try await self.resolve(host, families: families)
        }
    }

    /// Asks `source` for `hosts` in one request and stores every answer, counting the request as one upstream query.
    private func storeBatch(_ hosts: [HostName], families: AddressFamilies, from source: any BatchResolutionSource) async throws(ResolutionError) {
        let started = ContinuousClock.now
        // A flush that abandons the queries in flight abandons this one too: its answers are not stored.
        let generation = state.withLock { $0.generation }
        let result: Result<[HostName: SourceAnswer], ResolutionError>
        do {
            result = .success(try await source.queryBatch(hosts, families: families))
        } catch {
            result = .failure(error)
        }
        let outcomeName: String
        switch result {
        case .success: outcomeName = "batch"
        case .failure(let error): outcomeName = error.code.description
        }
        let (evicted, entries) = state.withLock { state in
            state.stats.upstreamQueries[ResolverStats.UpstreamOutcome(source: source.name, outcome: outcomeName), default: 0] += 1
            guard case .success(let answers) = result, state.generation == generation else { return (0, state.storage.count) }
            let now = clock.now()
            for (host, answer) in answers { state.store(answer, for: host, now: now, limits: limits) }
            return (state.evictOverflow(limits: limits), state.storage.count)
        }
        metrics.recordUpstream(outcome: outcomeName, duration: started.duration(to: .now))
        if evicted > 0 { metrics.evictions.increment(by: evicted) }
        metrics.entries.record(entries)
        if case .failure(let error) = result { throw error }
    }

    /// Forgets everything known about `host`; the next lookup asks upstream.
    public func flush(_ host: HostName) {
        let entries = state.withLock { state in
            state.storage.remove(host)
            return state.storage.count
        }
        metrics.entries.record(entries)
    }

    /// Forgets every entry.
    /// - Parameter abandoningQueriesInFlight: false (the default): queries in flight still complete and their answers
    ///   are stored. True, for a network change: queries in flight are left to finish for the callers waiting on
    ///   them, but later lookups do not join them and their answers are not stored, so what the cache learns from
    ///   now on comes from queries made from now on.
    public func flushAll(abandoningQueriesInFlight: Bool = false) {
        state.withLock { state in
            state.storage.removeAll()
            guard abandoningQueriesInFlight else { return }
            state.generation += 1
            for (key, flight) in state.flights { state.abandoned[key, default: []].append(flight) }
            state.abandonedCount += state.flights.count
            state.flights.removeAll()
        }
        metrics.entries.record(0)
    }

    /// What the cache has done so far.
    public var stats: ResolverStats {
        state.withLock { state in
            var stats = state.stats
            stats.entries = state.storage.count
            stats.pendingQueries = state.flights.count + state.abandonedCount
            return stats
        }
    }

    // MARK: - Upstream

    private func resolveUpstream(_ key: FlightKey) async throws -> Resolution {
        let waiterID = nextWaiterID()
        var staleTimer: Task<Void, Never>?
        defer { staleTimer?.cancel() }
        var lateOutcome: CacheOutcome?
        let outcome: Result<Resolution, ResolutionError> = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let (join, generation, armStaleTimer) = join(key, waiterID: waiterID, as: .task(continuation), checkingCancellation: true)
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
                    launch(key, generation: generation)
                case .rejected(let pending):
                    continuation.resume(returning: .failure(Self.rejection(key, pending: pending)))
                }
                if armStaleTimer { staleTimer = startStaleTimer(key, waiterID: waiterID) }
            }
        } onCancel: {
            // Only this task's own waiter has its ID, and it is a suspended task.
            if case .task(let continuation) = removeWaiter(key, waiterID: waiterID) { continuation.resume(throwing: CancellationError()) }
        }

        if let lateOutcome, let resolution = try deliver(lateOutcome, host: key.host, families: key.families) {
            return resolution
        }
        countUpstream(outcome)
        return try outcome.get()
    }

    /// ``resolve(_:families:)`` for a caller that must not suspend, such as an event loop: `completion` is called once
    /// (unless cancelled first), at once when the cache answers, else on whatever thread the source answers on. Fresh
    /// negative answers and failures come as the ``ResolutionError``s ``resolve(_:families:)`` throws.
    ///
    /// A caller that loses interest cancels with the returned ticket (nil when the completion was called before
    /// `resolve` returned): the upstream query goes on to fill the cache, as it does when a waiting task is cancelled.
    /// When the cache can serve stale, a task is started to answer this caller stale after
    /// ``Configuration/staleAnswerClientTimeout``.
    @discardableResult
    package func resolve(
        _ host: HostName,
        families: AddressFamilies,
        completion: @escaping @Sendable (Result<Resolution, ResolutionError>) -> Void
    ) -> WaiterTicket? {
        do {
            if let resolution = try cachedResolution(host, families: families) {
                completion(.success(resolution))
                return nil
            }
        } catch {
            completion(.failure(Self.resolutionError(error)))
            return nil
        }
        let key = FlightKey(host: host, families: families)
        let waiterID = nextWaiterID()
        let timer = limits.armsStaleTimer ? StaleTimer() : nil
        let (join, generation, armStaleTimer) = join(key, waiterID: waiterID, as: .callback(completion, timer), checkingCancellation: false)
        switch join {
        case .answered(let outcome):
            do {
                // Not `.upstream`: that one joins a flight.
                completion(try deliver(outcome, host: host, families: families).map { .success($0) } ?? .failure(ResolutionError(.internalError, "no answer")))
            } catch {
                completion(.failure(Self.resolutionError(error)))
            }
            return nil
        case .cancelled:
            completion(.failure(ResolutionError(.internalError, "a lookup without a task was cancelled")))
            return nil
        case .joined:
            metrics.coalesced.increment()
        case .started:
            launch(key, generation: generation)
        case .rejected(let pending):
            resume(.callback(completion, nil), .failure(Self.rejection(key, pending: pending)))
            return nil
        }
        if armStaleTimer, let timer { timer.arm(startStaleTimer(key, waiterID: waiterID)) }
        return WaiterTicket(key: key, waiterID: waiterID)
    }

    /// A completion waiting for an upstream answer, to cancel with ``cancel(_:)``.
    package struct WaiterTicket: Sendable {
        let key: FlightKey
        let waiterID: UInt64
    }

    /// Stops waiting for the answer of ``resolve(_:families:completion:)``. True when the completion will not be
    /// called; false when it has been called already, or is being called (the answer came first).
    package func cancel(_ ticket: WaiterTicket) -> Bool {
        guard let waiter = removeWaiter(ticket.key, waiterID: ticket.waiterID) else { return false }
        waiter.disarm()
        return true
    }

    /// Takes a waiter out of its flight, or out of an abandoned one; nil when the flight has answered it.
    private func removeWaiter(_ key: FlightKey, waiterID: UInt64) -> Waiter? {
        state.withLock { state -> Waiter? in
            if let waiter = state.flights[key]?.waiters.removeValue(forKey: waiterID) { return waiter }
            guard let index = state.abandoned[key]?.firstIndex(where: { $0.waiters[waiterID] != nil }) else { return nil }
            return state.abandoned[key]![index].waiters.removeValue(forKey: waiterID)
        }
    }

    private func nextWaiterID() -> UInt64 {
        state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
    }

    /// Joins the flight of `key` as `waiter`, or starts it (the caller launches it, with `generation`), unless the
    /// cache can answer after all, the pending bound is reached, or (`checkingCancellation`) the calling task is
    /// cancelled. `armStaleTimer`: the entry can be served stale, so the waiter's client response timer is due.
    private func join(
        _ key: FlightKey,
        waiterID: UInt64,
        as waiter: Waiter,
        checkingCancellation: Bool
    ) -> (JoinOutcome, generation: UInt64, armStaleTimer: Bool) {
        state.withLock { state in
            // The cache may have been filled since the fast path looked.
            let now = clock.now()
            let outcome = state.answerFromCache(key.host, key.families, now: now, limits: limits)
            if case .upstream = outcome {
            } else {
                return (.answered(outcome), 0, false)
            }
            if checkingCancellation, Task.isCancelled { return (.cancelled, 0, false) }
            let join: JoinOutcome
            var generation: UInt64 = 0
            if state.flights[key] != nil {
                state.flights[key]!.waiters[waiterID] = waiter
                state.stats.coalescedLookups += 1
                join = .joined
            } else if state.flights.count + state.abandonedCount < limits.maxPendingQueries {
                state.flights[key] = Flight(waiters: [waiterID: waiter], generation: state.generation)
                generation = state.generation
                join = .started
            } else if let stale = state.staleAnswer(key, now: now, limits: limits) {
                // Overloaded upstream is what serve-stale is for: answer from the expired entry.
                state.stats.staleHits += 1
                return (.answered(.stale(stale)), 0, false)
            } else {
                state.stats.rejectedLookups += 1
                return (.rejected(state.flights.count + state.abandonedCount), 0, false)
            }
            return (join, generation, limits.armsStaleTimer && state.canServeStale(key, now: now, limits: limits))
        }
    }

    private static func rejection(_ key: FlightKey, pending: Int) -> ResolutionError {
        ResolutionError(
            .tooManyPendingQueries,
            "\(pending) upstream queries are already pending (maxPendingQueries); not asking for \(key.host)"
        )
    }

    private static func resolutionError(_ error: any Error) -> ResolutionError {
        error as? ResolutionError ?? ResolutionError(.internalError, "the cache failed: \(error)", cause: error)
    }

    /// Hands a waiter its outcome. A callback's is counted here; a task counts its own as it returns from
    /// ``resolveUpstream(_:)``.
    private func resume(_ waiter: Waiter, _ outcome: Result<Resolution, ResolutionError>) {
        if case .callback = waiter { countUpstream(outcome) }
        waiter.resume(outcome)
    }

    /// Counts a flight's outcome for one of its waiters, as the metrics name it.
    private func countUpstream(_ outcome: Result<Resolution, ResolutionError>) {
        switch outcome {
        case .success(let resolution) where resolution.stale:
            metrics.staleHits.increment()
        case .failure(let error) where error.code == .tooManyPendingQueries:
            metrics.rejected.increment()
        default:
            metrics.misses.increment()
        }
    }

    /// RFC 8767's client response timer: if the refresh of an expired entry has not answered this waiter in
    /// ``Configuration/staleAnswerClientTimeout``, answer it stale; the refresh goes on for the cache.
    private func startStaleTimer(_ key: FlightKey, waiterID: UInt64) -> Task<Void, Never> {
        let timeout = limits.staleAnswerClientTimeout
        staleTimersRunning.add(1, ordering: .relaxed)
        return Task {
            defer { staleTimersRunning.subtract(1, ordering: .relaxed) }
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            let taken = state.withLock { state in
                state.answerWaiterStale(key, waiterID: waiterID, now: clock.now(), limits: limits)
            }
            if let (waiter, resolution) = taken {
                resume(waiter, .success(resolution))
            }
        }
    }

    /// Starts the upstream query for `key`, whose flight is already registered. The query is not tied to any
    /// caller's task: one caller's cancellation must not fail the others.
    private func launch(_ key: FlightKey, generation: UInt64) {
        let started = ContinuousClock.now
        source.startQuery(key.host, families: key.families) { [self] result in
            complete(key, generation: generation, with: result, now: clock.now(), duration: started.duration(to: .now))
        }
    }

    private func complete(
        _ key: FlightKey,
        generation: UInt64,
        with result: Result<SourceAnswer, ResolutionError>,
        now: MonotonicInstant,
        duration: Duration
    ) {
        let outcomeName: String
        switch result {
        case .success(let answer): outcomeName = SourceAnswer.outcomeName(of: answer)
        case .failure(let error): outcomeName = error.code.description
        }
        let (waiters, delivered, evicted, entries) = state.withLock { state in
            state.stats.upstreamQueries[ResolverStats.UpstreamOutcome(source: source.name, outcome: outcomeName), default: 0] += 1
            guard state.flights[key]?.generation == generation else {
                // Abandoned by a flush: its waiters get what it found, and the cache keeps none of it.
                let flight = state.abandoned[key].flatMap { flights in
                    flights.firstIndex { $0.generation == generation }.map { state.abandoned[key]!.remove(at: $0) }
                }
                if state.abandoned[key]?.isEmpty == true { state.abandoned[key] = nil }
                if flight != nil { state.abandonedCount -= 1 }
                let waiters = flight?.waiters ?? [:]
                state.stats.misses += waiters.count
                let delivered = result.flatMap { state.resolution(of: $0, for: key, now: now, limits: limits) }
                return (waiters, delivered, 0, state.storage.count)
            }
            let flight = state.flights.removeValue(forKey: key)
            var evicted = 0
            let delivered: Result<Resolution, ResolutionError>
            switch result {
            case .success(let answer):
                state.store(answer, for: key.host, now: now, limits: limits)
                delivered =
                    state.resolutionAfterUpstream(key, now: now, limits: limits)
                    ?? .failure(ResolutionError(.malformedAnswer, "\(source.name) did not answer every family asked for \(key.host)"))
                // Evict only once the answer is assembled: with maxEntries = 1, the entry just stored may itself
                // be the least recently used.
                evicted = state.evictOverflow(limits: limits)
            case .failure(let error):
                state.postponeRefreshAhead(key, now: now, limits: limits)
                delivered = state.staleAfterFailure(key, now: now, limits: limits) ?? .failure(error)
            }
            let waiters = flight?.waiters ?? [:]
            if case .success(let resolution) = delivered, resolution.stale {
                state.stats.staleHits += waiters.count
            } else {
                state.stats.misses += waiters.count
            }
            return (waiters, delivered, evicted, state.storage.count)
        }
        metrics.recordUpstream(outcome: outcomeName, duration: duration)
        if evicted > 0 { metrics.evictions.increment(by: evicted) }
        metrics.entries.record(entries)
        if case .failure(let error) = result {
            logger.debug(
                "upstream query failed",
                metadata: ["dns.source": "\(source.name)", "dns.outcome": "\(outcomeName)", "error": "\(error.message)"]
            )
        }
        for waiter in waiters.values {
            resume(waiter, delivered)
        }
    }
}

extension SourceAnswer {
    /// The answer's outcome as `httpdns_resolutions_total` names it: `success` with an address in either family, else
    /// `nameNotFound` when either family says so, else `noAddress`. The service's upstream counter names it alike.
    package static func outcomeName(of answer: SourceAnswer) -> String {
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
