import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSWire
import Metrics

/// Answers of every type the service does not resolve itself (DoH for types other than A and AAAA), relayed from the
/// upstream as they came and cached by their TTL.
///
/// - An answer is kept as the upstream's bytes, with where its TTLs are: what it holds is what came, never more
///   (a parsed message would copy each record's name), and a reply is those bytes with the ID, flags and TTLs
///   patched, so an answer that came in one message always goes out in one.
/// - One upstream query per question, however many clients ask at once; the question keyed by its name with ASCII
///   letters lowercased (the names relayed are printable ASCII: anything else is refused before it gets here).
/// - At most ``Configuration/maxEntries`` questions and ``Configuration/maxBytes`` of answers kept; the least
///   recently used goes first.
/// - At most ``Configuration/maxPendingQueries`` questions upstream at once; past it, a lookup fails at once.
/// - While the upstream fails, or answers SERVFAIL, REFUSED or NOTIMP, an expired answer is served with
///   ``Configuration/staleTTLSeconds`` for ``Configuration/maxStaleSeconds`` (RFC 8767), as the A and AAAA cache
///   does: a client waits at most ``Configuration/staleAnswerClientTimeoutMs`` for the refresh before it gets the
///   expired answer, and after a failed refresh the expired answer is served without asking again for
///   ``Configuration/staleRefreshRetrySeconds``.
/// - A negative answer is kept for its SOA's negative TTL (RFC 2308), or ``Configuration/negativeTTLSeconds``
///   without one, within the negative clamps. SERVFAIL, REFUSED and the like are relayed, never kept.
final class RelayedAnswers: Sendable {
    struct Configuration: Sendable {
        var maxEntries = 10_000
        var maxBytes = 16 << 20
        var maxPendingQueries = 1_024
        var minTTLSeconds: UInt32 = 5
        var maxTTLSeconds: UInt32 = 3_600
        var negativeTTLSeconds: UInt32 = 30
        var minNegativeTTLSeconds: UInt32 = 1
        var maxNegativeTTLSeconds: UInt32 = 300
        var maxStaleSeconds: UInt32 = 86_400
        var staleTTLSeconds: UInt32 = 30
        var staleAnswerClientTimeoutMs = 1_800
        var staleRefreshRetrySeconds: UInt32 = 30
    }

    /// An upstream answer as it came, and where its TTL fields are.
    struct Answer: Sendable {
        let bytes: [UInt8]
        let ttlOffsets: [Int]
        let hasEDNS: Bool
        var responseCode: UInt8 { bytes[3] & 0x0F }
    }

    /// What a lookup gives: the upstream's answer, how many seconds ago it came, and the TTL left (the stale TTL for
    /// a stale answer); or why there is none.
    enum Outcome: Sendable {
        case answer(Answer, ageSeconds: UInt32, ttlLeftSeconds: UInt32, stale: Bool)
        case failure(ResolutionError)
    }

    private struct Key: Hashable {
        let name: String
        let type: UInt16
        let recordClass: UInt16
    }

    private struct Entry {
        let answer: Answer
        let storedAt: MonotonicInstant
        let ttlSeconds: UInt32
        /// When refreshing the expired entry last failed.
        var failedAt: MonotonicInstant?
        /// What the entry holds, for the byte bound: the answer and its offsets, and a little for the entry itself.
        var bytes: Int { answer.bytes.count + answer.ttlOffsets.count * 8 + 256 }
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

    /// Whether `name` can be relayed: printable ASCII, so that its key and the name sent upstream are one spelling.
    static func canRelay(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    private static func key(_ question: DNSMessage.Question) -> Key {
        // ASCII letters only: a Unicode lowercasing would fold other characters (U+212A) onto them.
        var name = String(decoding: question.name.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        if name.hasSuffix("."), name.utf8.count > 1 { name.removeLast() }
        return Key(name: name, type: question.type.rawValue, recordClass: question.recordClass)
    }

    /// The answer to `question` if the cache holds a fresh one, without suspending: for answers on the event loop.
    func cachedAnswer(_ question: DNSMessage.Question) -> Outcome? {
        let key = Self.key(question)
        let now = clock.now()
        let entry = state.withLock { state -> Entry? in
            guard let slot = state.entries.slot(of: key) else { return nil }
            let entry = state.entries.value(at: slot)
            guard now < entry.storedAt.adding(seconds: entry.ttlSeconds) else { return nil }
            state.entries.touch(slot)
            return entry
        }
        guard let entry else { return nil }
        hits.increment()
        return freshOutcome(entry, now)
    }

    /// The answer to `question`: from the cache while fresh, else from the upstream.
    func answer(_ question: DNSMessage.Question) async -> Outcome {
        let key = Self.key(question)
        let now = clock.now()
        enum Step {
            case hit(Entry)
            case stale(Entry)
            case wait(Task<Outcome, Never>, stale: Entry?)
            case overloaded
        }
        let step = state.withLock { state -> Step in
            var expired: Entry?
            if let slot = state.entries.slot(of: key) {
                let entry = state.entries.value(at: slot)
                if now < entry.storedAt.adding(seconds: entry.ttlSeconds) {
                    state.entries.touch(slot)
                    return .hit(entry)
                }
                if now < entry.storedAt.adding(seconds: entry.ttlSeconds).adding(seconds: configuration.maxStaleSeconds) {
                    // A refresh failed a moment ago: no asking again yet (RFC 8767's failure recheck timer).
                    if let failedAt = entry.failedAt, now < failedAt.adding(seconds: configuration.staleRefreshRetrySeconds) {
                        return .stale(entry)
                    }
                    expired = entry
                }
            }
            if let flight = state.flights[key] { return .wait(flight, stale: expired) }
            guard state.flights.count < configuration.maxPendingQueries else { return expired.map(Step.stale) ?? .overloaded }
            let flight = Task { await self.fetch(key, question) }
            state.flights[key] = flight
            return .wait(flight, stale: expired)
        }
        switch step {
        case .hit(let entry):
            hits.increment()
            return freshOutcome(entry, now)
        case .stale(let entry):
            staleHits.increment()
            return staleOutcome(entry, now)
        case .wait(let flight, nil):
            return await flight.value
        case .wait(let flight, let entry?):
            // An expired answer to fall back on: the refresh gets the client's timer, and then the client gets the
            // expired answer while the refresh goes on (RFC 8767 §5).
            let timeout = configuration.staleAnswerClientTimeoutMs
            guard timeout > 0 else { return await flight.value }
            // Not a task group: it would wait for the refresh at its end whatever came first (awaiting a task's
            // value does not end when cancelled). Whichever of the two ends first answers; the other runs out.
            let refreshed: Outcome? = await withCheckedContinuation { continuation in
                let answered = Mutex(false)
                let answer: @Sendable (Outcome?) -> Void = { outcome in
                    let first = answered.withLock { answered in
                        defer { answered = true }
                        return !answered
                    }
                    if first { continuation.resume(returning: outcome) }
                }
                Task { answer(await flight.value) }
                Task {
                    try? await Task.sleep(for: .milliseconds(timeout))
                    answer(nil)
                }
            }
            if let refreshed { return refreshed }
            staleHits.increment()
            return staleOutcome(entry, clock.now())
        case .overloaded:
            failures.increment()
            return .failure(ResolutionError(.tooManyPendingQueries, "\(configuration.maxPendingQueries) questions are pending upstream already"))
        }
    }

    private func freshOutcome(_ entry: Entry, _ now: MonotonicInstant) -> Outcome {
        let age = Self.age(entry.storedAt, now)
        return .answer(entry.answer, ageSeconds: age, ttlLeftSeconds: entry.ttlSeconds - min(age, entry.ttlSeconds), stale: false)
    }

    private func staleOutcome(_ entry: Entry, _ now: MonotonicInstant) -> Outcome {
        .answer(entry.answer, ageSeconds: Self.age(entry.storedAt, now), ttlLeftSeconds: configuration.staleTTLSeconds, stale: true)
    }

    /// Asks the upstream for `question` and keeps what can be kept; when it fails, or answers a failure, an expired
    /// answer still within the stale window.
    private func fetch(_ key: Key, _ question: DNSMessage.Question) async -> Outcome {
        defer { _ = state.withLock { $0.flights.removeValue(forKey: key) } }
        var failure: ResolutionError
        var relayed: Answer?
        do {
            let query = try DNSMessage(id: 0, questions: [question]).encoded()
            let received = try await relay.send(query)
            let scan = try AnswerScan(received)
            // Whatever follows the last record is no part of the answer (and would sit before an OPT record added).
            let bytes = scan.end == received.count ? received : Array(received[..<scan.end])
            let answer = Answer(bytes: bytes, ttlOffsets: scan.ttlOffsets, hasEDNS: scan.hasEDNS)
            if let ttl = cacheableTTL(scan) {
                let entry = Entry(answer: answer, storedAt: clock.now(), ttlSeconds: ttl)
                state.withLock { state in
                    state.bytes -= state.entries.remove(key)?.bytes ?? 0
                    state.entries.set(entry, for: key)
                    state.bytes += entry.bytes
                    while state.entries.count > configuration.maxEntries || state.bytes > configuration.maxBytes,
                        let (_, evicted) = state.entries.removeOldest()
                    {
                        state.bytes -= evicted.bytes
                    }
                }
                misses.increment()
                return .answer(answer, ageSeconds: 0, ttlLeftSeconds: ttl, stale: false)
            }
            // SERVFAIL, REFUSED, NOTIMP …: relayed as it came, unless an expired answer can stand in.
            relayed = answer
            failure = ResolutionError(.serverFailure, "the upstream answered \(DNSMessage.ResponseCode(rawValue: answer.responseCode))")
        } catch let error as ResolutionError {
            failure = error
        } catch {
            failure = ResolutionError(.malformedAnswer, "the upstream's answer could not be read: \(error)")
        }
        let now = clock.now()
        let stale = state.withLock { state -> Entry? in
            guard let slot = state.entries.slot(of: key) else { return nil }
            let entry = state.entries.value(at: slot)
            guard now < entry.storedAt.adding(seconds: entry.ttlSeconds).adding(seconds: configuration.maxStaleSeconds) else { return nil }
            state.entries.modify(at: slot) { $0.failedAt = now }
            return entry
        }
        if let stale {
            staleHits.increment()
            return staleOutcome(stale, now)
        }
        failures.increment()
        if let relayed { return .answer(relayed, ageSeconds: 0, ttlLeftSeconds: 0, stale: false) }
        return .failure(failure)
    }

    /// Whole seconds from `stored` to `now`, rounded down.
    private static func age(_ stored: MonotonicInstant, _ now: MonotonicInstant) -> UInt32 {
        now.nanoseconds > stored.nanoseconds ? UInt32(clamping: (now.nanoseconds - stored.nanoseconds) / 1_000_000_000) : 0
    }

    /// How long an answer is kept: the smallest TTL of its answer records, within the clamps; for NXDOMAIN or no
    /// data, its SOA's negative TTL (the smaller of the SOA record's TTL and its MINIMUM, RFC 2308 §5) or the
    /// default, within the negative clamps; nil for a failure's answer, which is never kept.
    private func cacheableTTL(_ scan: AnswerScan) -> UInt32? {
        switch scan.responseCode {
        case 0 where !scan.answerTTLs.isEmpty:
            let smallest = scan.answerTTLs.min() ?? 0
            return min(max(smallest, configuration.minTTLSeconds), configuration.maxTTLSeconds)
        case 0, 3:
            let negative = scan.soaNegativeTTL ?? configuration.negativeTTLSeconds
            return min(max(negative, configuration.minNegativeTTLSeconds), configuration.maxNegativeTTLSeconds)
        default:
            return nil
        }
    }
}

/// What the cache needs of an upstream answer, read without copying it: its response code, where each record's TTL
/// is (the OPT record's, which is not a TTL, aside), the answer records' TTLs, and a SOA's negative TTL.
struct AnswerScan {
    let responseCode: UInt8
    var ttlOffsets: [Int] = []
    var answerTTLs: [UInt32] = []
    var soaNegativeTTL: UInt32?
    var hasEDNS = false
    /// Where the last record ends.
    var end = 12

    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    init(_ bytes: [UInt8]) throws(Malformed) {
        guard bytes.count >= 12 else { throw Malformed(description: "shorter than a DNS header") }
        func count(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
        func number(_ at: Int) -> UInt32 { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        responseCode = bytes[3] & 0x0F
        var offset = 12
        /// The offset after the name at `offset`: labels, then a zero or a compression pointer.
        func skipName(_ start: Int) throws(Malformed) -> Int {
            var at = start
            for _ in 0..<128 {
                guard at < bytes.count else { break }
                let length = Int(bytes[at])
                if length == 0 { return at + 1 }
                if length & 0xC0 == 0xC0 {
                    guard at + 1 < bytes.count else { break }
                    return at + 2
                }
                guard length & 0xC0 == 0 else { break }
                at += 1 + length
            }
            throw Malformed(description: "a name runs past the message at byte \(start)")
        }
        for _ in 0..<count(4) {
            offset = try skipName(offset) + 4
            guard offset <= bytes.count else { throw Malformed(description: "the question runs past the message") }
        }
        let sections = [count(6), count(8), count(10)]
        for (section, records) in sections.enumerated() {
            for _ in 0..<records {
                offset = try skipName(offset)
                guard offset + 10 <= bytes.count else { throw Malformed(description: "a record runs past the message") }
                let type = count(offset)
                let ttl = number(offset + 4)
                let length = count(offset + 8)
                let data = offset + 10
                guard data + length <= bytes.count else { throw Malformed(description: "a record's data runs past the message") }
                if type == 41 {
                    hasEDNS = true  // OPT: its "TTL" is the extended response code and flags.
                } else {
                    ttlOffsets.append(offset + 4)
                    if section == 0 { answerTTLs.append(ttl) }
                    if section == 1, type == 6, length >= 22 { soaNegativeTTL = min(ttl, number(data + length - 4)) }
                }
                offset = data + length
            }
        }
        end = offset
    }
}
