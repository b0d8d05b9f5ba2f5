import HTTPDNSSynchronization

extension ResolverCache {
    /// One name and family set whose upstream query is in flight.
    struct FlightKey: Hashable, Sendable {
        let host: HostName
        let families: AddressFamilies
    }

    /// A caller waiting for a flight's answer: a suspended task, or the completion of a caller that does not suspend.
    enum Waiter: Sendable {
        case task(CheckedContinuation<Result<Resolution, ResolutionError>, any Error>)
        /// With the waiter's client response timer when the cache arms one (a task's ends with its task).
        case callback(@Sendable (Result<Resolution, ResolutionError>) -> Void, StaleTimer?)

        func resume(_ result: Result<Resolution, ResolutionError>) {
            switch self {
            case .task(let continuation): continuation.resume(returning: result)
            case .callback(let completion, let timer):
                timer?.disarm()
                completion(result)
            }
        }

        /// Stops the client response timer of a waiter taken out without an answer (cancelled).
        func disarm() {
            if case .callback(_, let timer?) = self { timer.disarm() }
        }
    }

    /// A callback waiter's client response timer (``Configuration/staleAnswerClientTimeout``), cancelled once the
    /// waiter is answered or cancelled, so that a lookup answered in a millisecond does not leave a task asleep for
    /// the rest of the timeout.
    final class StaleTimer: Sendable {
        private let state = Mutex<(task: Task<Void, Never>?, disarmed: Bool)>((nil, false))

        /// Keeps `task` to cancel; cancels it at once when the waiter has been answered already.
        func arm(_ task: Task<Void, Never>) {
            let late = state.withLock { state -> Bool in
                if state.disarmed { return true }
                state.task = task
                return false
            }
            if late { task.cancel() }
        }

        func disarm() {
            state.withLock { state -> Task<Void, Never>? in
                state.disarmed = true
                defer { state.task = nil }
                return state.task
            }?.cancel()
        }
    }

    struct Flight {
        var waiters: [UInt64: Waiter]
        /// The cache's ``State/generation`` when the flight started: an answer from an older one is not stored.
        let generation: UInt64
    }

    /// What the cache knows of one family of one name.
    struct FamilyRecord<Address: Sendable & Hashable> {
        /// Empty for a negative answer.
        var addresses: [Address]
        /// Set for a negative answer.
        var negative: NegativeAnswer?
        var originTTLSeconds: UInt32
        var expiresAt: MonotonicInstant
        var refreshAt: MonotonicInstant
        /// When a refresh of this expired record last failed.
        var refreshFailedAt: MonotonicInstant?

        enum Condition: Equatable {
            case fresh
            /// Fresh, but in the last part of its TTL: refresh ahead.
            case refreshDue
            /// Expired, within the staleness limit; upstream should be asked.
            case stale
            /// Expired, within the staleness limit, and a refresh failed lately: serve stale without asking.
            case staleAfterRecentFailure
            /// Past the staleness limit: useless.
            case gone
        }

        func condition(at now: MonotonicInstant, _ limits: Limits) -> Condition {
            if now < expiresAt { return now < refreshAt ? .fresh : .refreshDue }
            guard limits.maxStaleNanoseconds > 0, now < expiresAt.adding(nanoseconds: limits.maxStaleNanoseconds) else {
                return .gone
            }
            if let failed = refreshFailedAt, now < failed.adding(nanoseconds: limits.staleRefreshRetryNanoseconds) {
                return .staleAfterRecentFailure
            }
            return .stale
        }

        init(_ answer: FamilyAnswer<Address>, now: MonotonicInstant, limits: Limits) {
            switch answer {
            case .addresses(let addresses, let ttlSeconds):
                let ttl = min(max(ttlSeconds, limits.minTTLSeconds), limits.maxTTLSeconds)
                let fraction = limits.refreshAheadFraction  // 0…1, checked by Configuration.validate()
                self.addresses = addresses
                self.negative = nil
                self.originTTLSeconds = ttlSeconds
                self.refreshAt = now.adding(seconds: ttl - UInt32((Double(ttl) * fraction).rounded(.down)))
                self.expiresAt = now.adding(seconds: ttl)
            case .negative(let kind, let ttlSeconds):
                let ttl = min(
                    max(ttlSeconds ?? limits.negativeTTLSeconds, limits.minNegativeTTLSeconds),
                    limits.maxNegativeTTLSeconds
                )
                self.addresses = []
                self.negative = kind
                self.originTTLSeconds = ttlSeconds ?? limits.negativeTTLSeconds
                self.expiresAt = now.adding(seconds: ttl)
                // Negative answers are not refreshed ahead: nobody is waiting on their addresses.
                self.refreshAt = self.expiresAt
            }
            self.refreshFailedAt = nil
        }
    }

    /// Everything the cache knows of one name: one LRU entry, so a lookup costs one hash whatever it asks.
    struct HostEntry {
        var ipv4: FamilyRecord<IPv4Address>? {
            didSet { assembled = nil }
        }
        var ipv6: FamilyRecord<IPv6Address>? {
            didSet { assembled = nil }
        }
        /// The positive answer last built from these records, and for which families: hits reuse it, so
        /// handing it out costs one reference count.
        var assembled: (families: AddressFamilies, answer: Resolution.Answer)?
        /// When the entry was last moved to the front of the LRU order.
        var lastTouched = MonotonicInstant(nanoseconds: 0)

        /// Calls `body` with the condition of each family in `families`, nil for a family not asked or not known.
        func conditions(
            _ families: AddressFamilies,
            at now: MonotonicInstant,
            _ limits: Limits
        ) -> (ipv4: FamilyRecord<IPv4Address>.Condition?, ipv6: FamilyRecord<IPv6Address>.Condition?, complete: Bool) {
            let wantsIPv4 = families.contains(.ipv4)
            let wantsIPv6 = families.contains(.ipv6)
            let ipv4 = wantsIPv4 ? self.ipv4?.condition(at: now, limits) : nil
            let ipv6 = wantsIPv6 ? self.ipv6?.condition(at: now, limits) : nil
            return (ipv4, ipv6, (!wantsIPv4 || ipv4 != nil) && (!wantsIPv6 || ipv6 != nil))
        }
    }

    enum CacheOutcome {
        /// Fresh records answer the lookup; `refresh` is the generation of a refresh-ahead flight just registered.
        case hit(Resolution, refresh: UInt64?)
        /// A fresh negative answer.
        case negative(ResolutionError)
        /// Expired records answer the lookup because a refresh failed recently.
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
        /// The source's name, for every ``Resolution`` the cache builds.
        let sourceName: String
        /// Names the upstream in the messages of negative answers.
        let upstreamDescription: String
        var storage = LRUStorage<HostName, HostEntry>()
        var flights: [FlightKey: Flight] = [:]
        /// Raised by ``ResolverCache/flushAll(abandoningQueriesInFlight:)``: the flights of older generations are
        /// in ``abandoned``, where no new caller joins them and whence no answer is stored.
        var generation: UInt64 = 0
        var abandoned: [FlightKey: [Flight]] = [:]
        /// The flights in ``abandoned``: they still count against ``Configuration/maxPendingQueries``.
        var abandonedCount = 0
        var stats = ResolverStats()
        var nextWaiterID: UInt64 = 0

        init(sourceName: String, upstreamDescription: String) {
            self.sourceName = sourceName
            self.upstreamDescription = upstreamDescription
        }

        /// The hot path: answers from fresh records, or from stale ones while refreshing fails.
        mutating func answerFromCache(
            _ host: HostName,
            _ families: AddressFamilies,
            now: MonotonicInstant,
            limits: Limits
        ) -> CacheOutcome {
            guard let slot = storage.slot(of: host) else { return .upstream }
            var outcome = CacheOutcome.upstream
            var refreshDue = false
            var touch = false
            let (sourceName, upstream) = (sourceName, upstreamDescription)
            let keep = storage.modify(at: slot) { entry -> Bool in
                // Like memcached, move a name to the front at most once a second: a hot name stays near the
                // front anyway, and the LRU order keeps a one-second resolution for a fraction of the stores.
                if now.nanoseconds &- entry.lastTouched.nanoseconds >= Self.touchIntervalNanoseconds {
                    entry.lastTouched = now
                    touch = true
                }
                let (ipv4, ipv6, complete) = entry.conditions(families, at: now, limits)
                if ipv4 == .gone || ipv6 == .gone {
                    if ipv4 == .gone { entry.ipv4 = nil }
                    if ipv6 == .gone { entry.ipv6 = nil }
                    return entry.ipv4 != nil || entry.ipv6 != nil
                }
                guard complete else { return true }
                if ipv4 == .stale || ipv6 == .stale { return true }
                if ipv4 == .staleAfterRecentFailure || ipv6 == .staleAfterRecentFailure {
                    outcome = .stale(
                        Self.staleResolution(host, families, &entry, now: now, sourceName: sourceName, upstream: upstream, limits)
                    )
                    return true
                }
                refreshDue = ipv4 == .refreshDue || ipv6 == .refreshDue
                switch Self.assemble(host, families, &entry, now: now, cached: true, sourceName: sourceName, upstream: upstream) {
                case .success(let resolution): outcome = .hit(resolution, refresh: nil)
                case .failure(let error): outcome = .negative(error)
                }
                return true
            }
            guard keep else {
                storage.remove(host)
                return .upstream
            }
            switch outcome {
            case .upstream:
                return .upstream
            case .stale:
                stats.staleHits += 1
            case .negative:
                stats.negativeHits += 1
            case .hit(let resolution, _):
                stats.hits += 1
                if refreshDue, flights.count + abandonedCount < limits.maxPendingQueries {
                    let key = FlightKey(host: host, families: families)
                    if flights[key] == nil {
                        flights[key] = Flight(waiters: [:], generation: generation)
                        outcome = .hit(resolution, refresh: generation)
                    }
                }
            }
            if touch { storage.touch(slot) }
            return outcome
        }

        static let touchIntervalNanoseconds: UInt64 = 1_000_000_000

        /// Stores what the source said for each family, clamping TTLs. The size bound is restored by
        /// ``evictOverflow(limits:)``.
        mutating func store(_ answer: SourceAnswer, for host: HostName, now: MonotonicInstant, limits: Limits) {
            func update(_ entry: inout HostEntry) {
                if let ipv4 = answer.ipv4 { entry.ipv4 = FamilyRecord(ipv4, now: now, limits: limits) }
                if let ipv6 = answer.ipv6 { entry.ipv6 = FamilyRecord(ipv6, now: now, limits: limits) }
            }
            if let slot = storage.slot(of: host) {
                storage.modify(at: slot, update)
                storage.touch(slot)
            } else {
                var entry = HostEntry()
                update(&entry)
                storage.set(entry, for: host)
            }
        }

        /// Whether every family of `families` has a record for `host` that is still fresh (a batch need not ask).
        func holdsFresh(_ host: HostName, _ families: AddressFamilies, now: MonotonicInstant, limits: Limits) -> Bool {
            guard let slot = storage.slot(of: host) else { return false }
            let entry = storage.value(at: slot)
            if families.contains(.ipv4), !(entry.ipv4.map { now < $0.expiresAt } ?? false) { return false }
            if families.contains(.ipv6), !(entry.ipv6.map { now < $0.expiresAt } ?? false) { return false }
            return true
        }

        /// What `answer` says for `key`, as a stored answer would say it, without storing it: for the callers of a
        /// flight a flush abandoned.
        func resolution(of answer: SourceAnswer, for key: FlightKey, now: MonotonicInstant, limits: Limits) -> Result<
            Resolution, ResolutionError
        > {
            var entry = HostEntry()
            entry.ipv4 = answer.ipv4.map { FamilyRecord($0, now: now, limits: limits) }
            entry.ipv6 = answer.ipv6.map { FamilyRecord($0, now: now, limits: limits) }
            guard entry.conditions(key.families, at: now, limits).complete else {
                return .failure(ResolutionError(.malformedAnswer, "\(sourceName) did not answer every family asked for \(key.host)"))
            }
            return Self.assemble(key.host, key.families, &entry, now: now, cached: false, sourceName: sourceName, upstream: upstreamDescription)
        }

        /// Evicts the least recently used names past ``Configuration/maxEntries``. Returns how many went.
        mutating func evictOverflow(limits: Limits) -> Int {
            var evicted = 0
            while storage.count > limits.maxEntries, storage.removeOldest() != nil {
                evicted += 1
            }
            stats.evictions += evicted
            return evicted
        }

        /// The answer for the waiters of a flight that just stored its answer; nil if the source left out a
        /// family it was asked for.
        mutating func resolutionAfterUpstream(_ key: FlightKey, now: MonotonicInstant, limits: Limits) -> Result<
            Resolution, ResolutionError
        >? {
            guard let slot = storage.slot(of: key.host) else { return nil }
            let (sourceName, upstream) = (sourceName, upstreamDescription)
            return storage.modify(at: slot) { entry in
                guard entry.conditions(key.families, at: now, limits).complete else { return nil }
                return Self.assemble(key.host, key.families, &entry, now: now, cached: false, sourceName: sourceName, upstream: upstream)
            }
        }

        /// After a failed refresh of fresh records, waits ``Configuration/staleRefreshRetry`` before the
        /// next refresh-ahead, so hits on a name whose upstream fails fast do not become a stream of queries.
        mutating func postponeRefreshAhead(_ key: FlightKey, now: MonotonicInstant, limits: Limits) {
            guard let slot = storage.slot(of: key.host) else { return }
            let next = now.adding(nanoseconds: limits.staleRefreshRetryNanoseconds)
            storage.modify(at: slot) { entry in
                if key.families.contains(.ipv4), let record = entry.ipv4, now < record.expiresAt {
                    entry.ipv4!.refreshAt = min(record.expiresAt, next)
                }
                if key.families.contains(.ipv6), let record = entry.ipv6, now < record.expiresAt {
                    entry.ipv6!.refreshAt = min(record.expiresAt, next)
                }
            }
        }

        /// Whether an expired entry could answer `key` stale while its refresh is in flight.
        mutating func canServeStale(_ key: FlightKey, now: MonotonicInstant, limits: Limits) -> Bool {
            guard let slot = storage.slot(of: key.host) else { return false }
            return storage.modify(at: slot) { entry in
                let (ipv4, ipv6, complete) = entry.conditions(key.families, at: now, limits)
                return complete && ipv4 != .gone && ipv6 != .gone
            }
        }

        /// The stale answer for `key`, if an expired entry within the staleness limit holds every family asked.
        mutating func staleAnswer(_ key: FlightKey, now: MonotonicInstant, limits: Limits) -> Resolution? {
            guard canServeStale(key, now: now, limits: limits), let slot = storage.slot(of: key.host) else { return nil }
            let (sourceName, upstream) = (sourceName, upstreamDescription)
            return storage.modify(at: slot) { entry in
                Self.staleResolution(key.host, key.families, &entry, now: now, sourceName: sourceName, upstream: upstream, limits)
            }
        }

        /// When a waiter's client response timer fires: takes it out of its flight and gives it the stale
        /// answer, if it is still waiting and the entry can still answer.
        mutating func answerWaiterStale(
            _ key: FlightKey,
            waiterID: UInt64,
            now: MonotonicInstant,
            limits: Limits
        ) -> (Waiter, Resolution)? {
            guard flights[key]?.waiters[waiterID] != nil, let resolution = staleAnswer(key, now: now, limits: limits) else {
                return nil
            }
            let waiter = flights[key]!.waiters.removeValue(forKey: waiterID)!
            stats.staleHits += 1
            return (waiter, resolution)
        }

        /// After a failed refresh: the stale answer, if every family asked has a record within the staleness limit.
        mutating func staleAfterFailure(_ key: FlightKey, now: MonotonicInstant, limits: Limits) -> Result<Resolution, ResolutionError>?
        {
            guard let slot = storage.slot(of: key.host) else { return nil }
            let (sourceName, upstream) = (sourceName, upstreamDescription)
            return storage.modify(at: slot) { entry in
                let (ipv4, ipv6, complete) = entry.conditions(key.families, at: now, limits)
                guard complete, ipv4 != .gone, ipv6 != .gone else { return nil }
                var anyExpired = false
                if let ipv4, ipv4 != .fresh, ipv4 != .refreshDue {
                    entry.ipv4!.refreshFailedAt = now
                    anyExpired = true
                }
                if let ipv6, ipv6 != .fresh, ipv6 != .refreshDue {
                    entry.ipv6!.refreshFailedAt = now
                    anyExpired = true
                }
                // A failed refresh-ahead of still-fresh records changes nothing for their callers.
                guard anyExpired else {
                    return Self.assemble(key.host, key.families, &entry, now: now, cached: true, sourceName: sourceName, upstream: upstream)
                }
                return .success(
                    Self.staleResolution(key.host, key.families, &entry, now: now, sourceName: sourceName, upstream: upstream, limits)
                )
            }
        }

        /// An expired answer served stale: its addresses (none for a stale negative answer) with the stale TTL.
        private static func staleResolution(
            _ host: HostName,
            _ families: AddressFamilies,
            _ entry: inout HostEntry,
            now: MonotonicInstant,
            sourceName: String,
            upstream: String,
            _ limits: Limits
        ) -> Resolution {
            var resolution: Resolution
            switch assemble(host, families, &entry, now: now, cached: true, sourceName: sourceName, upstream: upstream) {
            case .success(let assembled):
                resolution = assembled
            case .failure(let error):
                resolution = Resolution(
                    host: host,
                    ipv4: [],
                    ipv6: [],
                    ttlSeconds: 0,
                    originTTLSeconds: 0,
                    source: sourceName,
                    cached: true,
                    stale: true
                )
                resolution.negativeAnswer = error.code == .nameNotFound ? .nameNotFound : .noData
            }
            resolution.ttlSeconds = limits.staleAnswerTTLSeconds
            resolution.stale = true
            return resolution
        }

        /// Combines the records of the families asked into one answer: addresses if any family has some, else
        /// the negative answer (NXDOMAIN wins over no data). The TTL is the smallest left among them.
        private static func assemble(
            _ host: HostName,
            _ families: AddressFamilies,
            _ entry: inout HostEntry,
            now: MonotonicInstant,
            cached: Bool,
            sourceName: String,
            upstream: String
        ) -> Result<Resolution, ResolutionError> {
            var ttl = UInt32.max
            var originTTL = UInt32.max
            var negative: NegativeAnswer?
            var positive = false
            let wantsIPv4 = families.contains(.ipv4)
            let wantsIPv6 = families.contains(.ipv6)
            if wantsIPv4, let record = entry.ipv4 {
                ttl = min(ttl, now.secondsUntil(record.expiresAt))
                originTTL = min(originTTL, record.originTTLSeconds)
                if let kind = record.negative { negative = kind } else { positive = true }
            }
            if wantsIPv6, let record = entry.ipv6 {
                ttl = min(ttl, now.secondsUntil(record.expiresAt))
                originTTL = min(originTTL, record.originTTLSeconds)
                if let kind = record.negative {
                    if negative != .nameNotFound { negative = kind }
                } else {
                    positive = true
                }
            }
            guard positive else {
                switch negative ?? .noData {
                case .nameNotFound:
                    return .failure(ResolutionError(.nameNotFound, "\(host) does not exist (NXDOMAIN from \(upstream))", ttlSeconds: ttl))
                case .noData:
                    let families = families == .all ? "A or AAAA" : families.description
                    return .failure(
                        ResolutionError(
                            .noAddress,
                            "\(host) exists but has no \(families) address (NOERROR, no data from \(upstream))",
                            ttlSeconds: ttl
                        )
                    )
                }
            }
            let answer: Resolution.Answer
            if let assembled = entry.assembled, assembled.families == families {
                answer = assembled.answer
            } else {
                answer = Resolution.Answer(
                    host: host,
                    ipv4: wantsIPv4 ? entry.ipv4?.addresses ?? [] : [],
                    ipv6: wantsIPv6 ? entry.ipv6?.addresses ?? [] : [],
                    originTTLSeconds: originTTL,
                    source: sourceName
                )
                entry.assembled = (families, answer)
            }
            return .success(Resolution(answer: answer, ttlSeconds: ttl, cached: cached, stale: false))
        }
    }
}
