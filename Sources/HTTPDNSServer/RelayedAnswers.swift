import HTTPDNSCore
import HTTPDNSWire
import Metrics
import Synchronization

/// Answers of every type the service does not resolve itself (DoH for types other than A and AAAA), relayed from the
/// upstream as they came and cached by their TTL.
///
/// - One upstream query per question, however many clients ask at once.
/// - At most ``Configuration/maxEntries`` questions and ``Configuration/maxBytes`` of answers kept (an answer can be
///   64 KiB); the least recently used goes first.
/// - At most ``Configuration/maxPendingQueries`` questions upstream at once; past it, a lookup fails at once.
/// - An expired answer is served, with ``Configuration/staleTTLSeconds``, for ``Configuration/maxStaleSeconds``
///   while the upstream fails (RFC 8767).
/// - A negative answer is kept for its SOA's negative TTL (RFC 2308), or ``Configuration/negativeTTLSeconds``
///   without one. SERVFAIL, REFUSED and the like are relayed, never kept.
final class RelayedAnswers: Sendable {
    struct Configuration: Sendable {
        var maxEntries = 10_000
        var maxBytes = 16 << 20
        var maxPendingQueries = 1_024
        var minTTLSeconds: UInt32 = 5
        var maxTTLSeconds: UInt32 = 3_600
        var negativeTTLSeconds: UInt32 = 30
        var maxStaleSeconds: UInt32 = 86_400
        var staleTTLSeconds: UInt32 = 30
    }

    /// What a lookup gives: the upstream's answer, how many seconds ago it came, and the TTL left (the stale TTL for
    /// a stale answer); or why there is none.
    enum Outcome: Sendable {
        case answer(DNSMessage, ageSeconds: UInt32, ttlLeftSeconds: UInt32, stale: Bool)
        case failure(ResolutionError)
    }

    private struct Key: Hashable {
        let name: String
        let type: UInt16
        let recordClass: UInt16
    }

    private struct Entry {
        let message: DNSMessage
        let storedAt: MonotonicInstant
        let ttlSeconds: UInt32
        /// The answer's size as it came, for the byte bound.
        let bytes: Int
    }

    private struct State {
        var entries = LRUStorage<Key, Entry>()
        var bytes = 0
        var flights: [Key: Task<Outcome, Never>] = [:]
    }

    private let relay: any MessageRelaying
    private let clock: any MonotonicClock
    private let configuration: Configuration
    private let state = Mutex(State())
    private let hits = Counter(label: "httpdns_relayed_lookups_total", dimensions: [("result", "hit")])
    private let misses = Counter(label: "httpdns_relayed_lookups_total", dimensions: [("result", "miss")])
    private let staleHits = Counter(label: "httpdns_relayed_lookups_total", dimensions: [("result", "stale")])
    private let failures = Counter(label: "httpdns_relayed_lookups_total", dimensions: [("result", "failed")])

    init(relay: any MessageRelaying, clock: any MonotonicClock, configuration: Configuration = Configuration()) {
        self.relay = relay
        self.clock = clock
        self.configuration = configuration
    }

    /// The answer to `question`: from the cache while fresh, else from the upstream.
    func answer(_ question: DNSMessage.Question) async -> Outcome {
        let name = question.name.lowercased()
        let key = Key(name: name.hasSuffix(".") ? String(name.dropLast()) : name, type: question.type.rawValue, recordClass: question.recordClass)
        let now = clock.now()
        enum Step {
            case hit(Entry)
            case wait(Task<Outcome, Never>)
            case overloaded
        }
        let step = state.withLock { state -> Step in
            if let slot = state.entries.slot(of: key) {
                let entry = state.entries.value(at: slot)
                if now < entry.storedAt.adding(seconds: entry.ttlSeconds) {
                    state.entries.touch(slot)
                    return .hit(entry)
                }
            }
            if let flight = state.flights[key] { return .wait(flight) }
            guard state.flights.count < configuration.maxPendingQueries else { return .overloaded }
            let flight = Task { await self.fetch(key, question) }
            state.flights[key] = flight
            return .wait(flight)
        }
        switch step {
        case .hit(let entry):
            hits.increment()
            let age = Self.age(entry.storedAt, now)
            return .answer(entry.message, ageSeconds: age, ttlLeftSeconds: entry.ttlSeconds - min(age, entry.ttlSeconds), stale: false)
        case .wait(let flight):
            return await flight.value
        case .overloaded:
            failures.increment()
            return .failure(ResolutionError(.tooManyPendingQueries, "\(configuration.maxPendingQueries) questions are pending upstream already"))
        }
    }

    /// Asks the upstream for `question` and keeps what can be kept; on failure, an expired answer still within the
    /// stale window.
    private func fetch(_ key: Key, _ question: DNSMessage.Question) async -> Outcome {
        let outcome: Outcome
        do {
            let query = try DNSMessage(id: 0, questions: [question]).encoded()
            let answer = try await relay.send(query)
            let message = try DNSMessage(parsing: answer)
            let ttl = cacheableTTL(message)
            let now = clock.now()
            state.withLock { state in
                guard let ttl else { return }
                state.bytes -= state.entries.remove(key)?.bytes ?? 0
                state.entries.set(Entry(message: message, storedAt: now, ttlSeconds: ttl, bytes: answer.count), for: key)
                state.bytes += answer.count
                while state.entries.count > configuration.maxEntries || state.bytes > configuration.maxBytes,
                    let (_, evicted) = state.entries.removeOldest()
                {
                    state.bytes -= evicted.bytes
                }
            }
            misses.increment()
            outcome = .answer(message, ageSeconds: 0, ttlLeftSeconds: ttl ?? 0, stale: false)
        } catch {
            let failure = error as? ResolutionError ?? ResolutionError(.malformedAnswer, "the upstream's answer could not be read: \(error)")
            let now = clock.now()
            let stale = state.withLock { state -> Entry? in
                guard let slot = state.entries.slot(of: key) else { return nil }
                let entry = state.entries.value(at: slot)
                let expiry = entry.storedAt.adding(seconds: entry.ttlSeconds)
                return now < expiry.adding(seconds: configuration.maxStaleSeconds) ? entry : nil
            }
            if let stale {
                staleHits.increment()
                outcome = .answer(stale.message, ageSeconds: Self.age(stale.storedAt, now), ttlLeftSeconds: configuration.staleTTLSeconds, stale: true)
            } else {
                failures.increment()
                outcome = .failure(failure)
            }
        }
        _ = state.withLock { $0.flights.removeValue(forKey: key) }
        return outcome
    }

    /// Whole seconds from `stored` to `now`, rounded down.
    private static func age(_ stored: MonotonicInstant, _ now: MonotonicInstant) -> UInt32 {
        now.nanoseconds > stored.nanoseconds ? UInt32(clamping: (now.nanoseconds - stored.nanoseconds) / 1_000_000_000) : 0
    }

    /// How long `message` is kept: the smallest TTL of its answers, within the clamps; for NXDOMAIN or no data,
    /// its SOA's negative TTL (the smaller of the SOA record's TTL and its MINIMUM, RFC 2308 §5), or the default;
    /// nil for a failure's answer, which is never kept.
    private func cacheableTTL(_ message: DNSMessage) -> UInt32? {
        switch message.responseCode {
        case .noError where !message.answers.isEmpty:
            let smallest = message.answers.map(\.ttlSeconds).min() ?? 0
            return min(max(smallest, configuration.minTTLSeconds), configuration.maxTTLSeconds)
        case .noError, .nameError:
            guard let soa = message.authorities.first(where: { $0.type == .soa }), soa.data.count >= 20 else {
                return configuration.negativeTTLSeconds
            }
            let minimum = soa.data.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return min(soa.ttlSeconds, minimum, configuration.maxTTLSeconds)
        default:
            return nil
        }
    }
}
