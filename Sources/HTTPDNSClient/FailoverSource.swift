import HTTPDNSCore
import HTTPDNSSynchronization
import Logging

/// Several sources asked as one, in the order given: each query goes to the first healthy source, and on to the
/// next when that one gives no answer. `httpdns serve` asks its upstreams of different kinds (DNS over TLS, over
/// HTTPS, plain DNS) through it; each source keeps its own failover between its servers.
///
/// - A source that fails (a timeout, a refused connection or certificate, a malformed answer) is passed over for a
///   cool-down, 1 s doubling with each failure in a row up to 60 s, then tried again first; while every source is
///   cooling down, they are still asked, soonest due first.
/// - SERVFAIL and REFUSED move on to the next source but cool none down: any client can ask for a name one source
///   fails and another answers (a DNSSEC-bogus name, which a validating resolver fails), and cooling the first down
///   for it would let that client push everyone's queries onto the second. With no better answer, the first such
///   answer is the answer.
/// - A source marked plain (unencrypted) is asked only after every encrypted source listed before it, and only when
///   none of those was refused for its certificate (evidence of an attack on the path, which a plain fallback would
///   complete), answered SERVFAIL or REFUSED, or was too busy (a flood of queries must not push everyone's into
///   plain text). An attacker on the path who drops the encrypted sources' packets can still force the plain one:
///   list one only if that is acceptable. A refused certificate is reported above a plain source's SERVFAIL.
/// - Unlike a service's addresses, sources are never reordered by speed: the operator's order is a preference (an
///   encrypted upstream before a plain one), not a guess.
/// - NXDOMAIN and no data are answers: no other source is asked.
package final class FailoverSource: ResolutionSource, MessageRelaying {
    package let sources: [any ResolutionSource & MessageRelaying]
    /// The indices of the sources whose path is unencrypted (plain DNS).
    package let plain: Set<Int>
    package let name: String
    private let health: Mutex<Health>
    private let clock: any MonotonicClock
    private let logger: Logger

    /// - Parameters:
    ///   - sources: in order of preference.
    ///   - plain: the indices of those whose path is unencrypted.
    package init(
        sources: [any ResolutionSource & MessageRelaying],
        plain: Set<Int> = [],
        coolDown: Duration = .seconds(1),
        maxCoolDown: Duration = .seconds(60),
        clock: any MonotonicClock = SystemMonotonicClock(),
        logger: Logger
    ) {
        self.sources = sources
        self.plain = plain
        name = sources.map(\.name).joined(separator: "+")
        health = Mutex(Health(count: sources.count, coolDown: coolDown, maxCoolDown: maxCoolDown))
        self.clock = clock
        self.logger = logger
    }

    package var upstreamDescription: String { sources.map(\.upstreamDescription).joined(separator: ", then ") }

    /// Each source's failures in a row, in the order given: what its cool-down follows.
    package var failuresInARow: [Int] { health.withLock { $0.failuresInARow } }

    package func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        try await run(subject: "\(host)") { source throws(ResolutionError) -> Outcome<SourceAnswer> in
            do {
                return .answer(try await source.query(host, families: families))
            } catch {
                throw Self.resolutionError(error, from: source)
            }
        }
    }

    /// Sends `query` to the sources in order; an answer with SERVFAIL or REFUSED is the answer only when no later
    /// source answers otherwise.
    package func send(_ query: [UInt8]) async throws -> [UInt8] {
        try await run(subject: "a relayed query of \(query.count) bytes") { source throws(ResolutionError) -> Outcome<[UInt8]> in
            let answer: [UInt8]
            do {
                answer = try await source.send(query)
            } catch {
                throw Self.resolutionError(error, from: source)
            }
            let responseCode = answer.count >= 4 ? answer[3] & 0x0F : 0
            return responseCode == 2 || responseCode == 5 ? .unusable(answer) : .answer(answer)
        }
    }

    package func networkChanged() async {
        // The sources first (each closes its connections): a query that starts in between is counted in the old
        // generation (not at all), never a source blamed on the new network for an outcome on the old one.
        for source in sources { await source.networkChanged() }
        health.withLock { $0.reset() }
    }

    package func shutdown() async {
        for source in sources { await source.shutdown() }
    }

    /// What one source gave: an answer, or one that another source may better (SERVFAIL or REFUSED in a relayed
    /// answer).
    private enum Outcome<Answer: Sendable>: Sendable {
        case answer(Answer)
        case unusable(Answer)
    }

    private func run<Answer: Sendable>(
        subject: @autoclosure () -> String,
        _ attempt: (any ResolutionSource & MessageRelaying) async throws(ResolutionError) -> Outcome<Answer>
    ) async throws(ResolutionError) -> Answer {
        let (healthOrder, generation) = health.withLock { ($0.order(now: clock.now()), $0.generation) }
        let order = plainAfterEncryptedBefore(healthOrder)
        var failures: [ResolutionError] = []
        var firstUnusable: (answer: Answer, index: Int)?
        // Encrypted sources whose certificate was refused, that answered SERVFAIL or REFUSED, or that were too busy:
        // no plain source listed after one of them is asked.
        var refusedEncrypted: [Int] = []
        func record(_ update: (inout Health) -> Void) {
            health.withLock { health in
                guard health.generation == generation else { return }
                update(&health)
            }
        }
        for index in order {
            guard !Task.isCancelled else { break }
            if plain.contains(index), refusedEncrypted.contains(where: { $0 < index }) { continue }
            let source = sources[index]
            do throws(ResolutionError) {
                switch try await attempt(source) {
                case .answer(let answer):
                    record { $0.succeeded(index) }
                    return answer
                case .unusable(let answer):
                    firstUnusable = firstUnusable ?? (answer, index)
                    if !plain.contains(index) { refusedEncrypted.append(index) }
                }
            } catch {
                switch error.code {
                case .badName, .shutdown, .noFamilies, .nameNotFound, .noAddress, .rejectedByGuard:
                    // The query itself, or an answer: no other source says otherwise.
                    throw error
                case .serverFailure, .refused:
                    if !plain.contains(index) { refusedEncrypted.append(index) }
                case .certificateRejected:
                    if !plain.contains(index) { refusedEncrypted.append(index) }
                    if !Task.isCancelled { record { $0.failed(index, now: clock.now()) } }
                case .tooManyPendingQueries:
                    // This process's own bound, not the source's failing: the next is asked, this one not blamed;
                    // but not a plain one, or a flood of queries would push everyone's into plain text.
                    if !plain.contains(index) { refusedEncrypted.append(index) }
                default:
                    if !Task.isCancelled { record { $0.failed(index, now: clock.now()) } }
                }
                failures.append(error)
                logger.debug("upstream source failed", metadata: ["httpdns.source": "\(source.name)", "error": "\(error)"])
            }
        }
        let rejected = failures.first(where: { $0.code == .certificateRejected })
        if let firstUnusable, rejected == nil || !plain.contains(firstUnusable.index) { return firstUnusable.answer }
        if let rejected { throw rejected }
        if let first = failures.first { throw first }
        if sources.isEmpty { throw ResolutionError(.internalError, "no upstream source to ask for \(subject())") }
        throw ResolutionError(.timeout, "the query for \(subject()) was cancelled")
    }

    /// `order` with each plain source moved after every encrypted source listed before it, so that it is asked only
    /// once those were, even while they cool down.
    private func plainAfterEncryptedBefore(_ order: [Int]) -> [Int] {
        guard !plain.isEmpty else { return order }
        var result: [Int] = []
        var waiting: [Int] = []
        var asked: Set<Int> = []
        func ready(_ index: Int) -> Bool { (0..<index).allSatisfy { plain.contains($0) || asked.contains($0) } }
        for index in order {
            if plain.contains(index), !ready(index) {
                waiting.append(index)
                continue
            }
            result.append(index)
            asked.insert(index)
            while let next = waiting.firstIndex(where: ready) {
                result.append(waiting.remove(at: next))
            }
        }
        return result + waiting
    }

    /// Which sources to ask, in what order: those not cooling down in the order given (one whose cool-down is over
    /// is asked first again, as a probe), then those cooling down, soonest due first.
    private struct Health {
        private(set) var failuresInARow: [Int]
        private var coolingUntil: [MonotonicInstant?]
        /// Raised by ``reset()``: the outcome of a query begun before it says nothing of the new network.
        private(set) var generation: UInt64 = 0
        let coolDownNanoseconds: Double
        let maxCoolDownNanoseconds: Double

        init(count: Int, coolDown: Duration, maxCoolDown: Duration) {
            failuresInARow = Array(repeating: 0, count: count)
            coolingUntil = Array(repeating: nil, count: count)
            coolDownNanoseconds = Double(coolDown.clampedNanoseconds)
            maxCoolDownNanoseconds = Double(maxCoolDown.clampedNanoseconds)
        }

        func order(now: MonotonicInstant) -> [Int] {
            let indices = failuresInARow.indices
            let ready = indices.filter { coolingUntil[$0].map { $0 <= now } ?? true }
            let cooling = indices.filter { !ready.contains($0) }.sorted { coolingUntil[$0]! < coolingUntil[$1]! }
            return ready + cooling
        }

        mutating func succeeded(_ index: Int) {
            failuresInARow[index] = 0
            coolingUntil[index] = nil
        }

        mutating func failed(_ index: Int, now: MonotonicInstant) {
            failuresInARow[index] += 1
            let doubled = coolDownNanoseconds * Double(1 << min(failuresInARow[index] - 1, 30))
            coolingUntil[index] = MonotonicInstant(nanoseconds: now.nanoseconds &+ UInt64(min(doubled, maxCoolDownNanoseconds)))
        }

        mutating func reset() {
            failuresInARow = Array(repeating: 0, count: failuresInARow.count)
            coolingUntil = Array(repeating: nil, count: coolingUntil.count)
            generation += 1
        }
    }

    private static func resolutionError(_ error: any Error, from source: any ResolutionSource) -> ResolutionError {
        error as? ResolutionError ?? ResolutionError(.internalError, "\(source.name) failed: \(error)", cause: error)
    }
}
