import HTTPDNSCore
import HTTPDNSSynchronization
import Logging
import NIOCore

/// Failover between a resolver's addresses within a time budget, in order of health (``ServiceAddressHealth``): each
/// address given its own attempt timeout, the next tried when one fails, a certificate failure reported above others.
/// ``DoTSource`` asks its servers through it, ``ServiceClient`` its service's addresses.
final class AddressFailover: Sendable {
    /// What an attempt's outcome means for the next address.
    enum AttemptFailure: Error {
        /// This address failed; another may answer.
        case tryNext(ResolutionError)
        /// This address answered, but SERVFAIL or REFUSED for this query; another may answer. The address is held
        /// to blame only when a later one answers the query: a name that fails everywhere (a DNSSEC failure, a broken
        /// zone) says nothing of the servers, and would otherwise let any client cool every server down by asking for
        /// it; a server that refuses what another answers (a wrong ACL, a broken resolver) is cooled down as one that
        /// failed.
        case tryNextAnswered(ResolutionError)
        /// The request itself is wrong, or was cancelled: no address will answer it differently.
        case final(ResolutionError)

        /// An answer's failure: ``tryNextAnswered(_:)`` for SERVFAIL and REFUSED, which are answers, else
        /// ``tryNext(_:)``.
        static func answer(_ error: ResolutionError) -> AttemptFailure {
            error.code == .serverFailure || error.code == .refused ? .tryNextAnswered(error) : .tryNext(error)
        }
    }

    let count: Int
    let budget: Duration
    /// What to call the resolver in messages: `dot`, say.
    let sourceName: String
    /// What to call one of its addresses: `server`, or `service` for an HTTPDNS service.
    let noun: String
    private let health: Mutex<ServiceAddressHealth>
    private let clock: any MonotonicClock
    private let logger: Logger
    private let budgetNanoseconds: Int64
    private let attemptTimeoutNanoseconds: Int64

    init(count: Int, timing: ServiceConnection, sourceName: String, noun: String = "server", clock: any MonotonicClock, logger: Logger) {
        self.count = count
        self.noun = noun
        self.budget = timing.budget
        self.sourceName = sourceName
        self.clock = clock
        self.logger = logger
        budgetNanoseconds = timing.budget.clampedNanoseconds
        attemptTimeoutNanoseconds = timing.attemptTimeout.clampedNanoseconds
        health = Mutex(ServiceAddressHealth(count: count, coolDown: timing.coolDown, maxCoolDown: timing.maxCoolDown))
    }

    /// A lookup begun outside ``run(subject:describe:resuming:_:)``, by a caller that tried the first address on its
    /// own (``DoTSource`` on an open connection, without a task): when its budget ends, and how that first attempt
    /// failed, if it did not simply need to be made again.
    struct Resumption: Sendable {
        let budgetEnds: NIODeadline
        let failed: FirstFailure?
    }

    /// The first address's failed attempt, as ``run(subject:describe:resuming:_:)`` would have met it.
    struct FirstFailure: Sendable {
        let index: Int
        /// The health's generation when the attempt began: a network change since leaves the address unblamed.
        let generation: UInt64
        let failure: AttemptFailure
        /// The attempt's own deadline, and its own timeout (later when the budget cut it short).
        let attemptEnds: NIODeadline
        let ownTimeout: NIODeadline
    }

    /// The address to try first now, and the health's generation, for a caller that makes that attempt itself.
    func first() -> (index: Int, generation: UInt64)? {
        health.withLock { health in health.first(now: clock.now()).map { ($0, health.generation) } }
    }

    /// A budget from now, and the first attempt's deadline and own timeout within it.
    func deadlines() -> (budgetEnds: NIODeadline, attemptEnds: NIODeadline, ownTimeout: NIODeadline) {
        let now = NIODeadline.now()
        let budgetEnds = now + .nanoseconds(budgetNanoseconds)
        let (attemptEnds, ownTimeout) = attemptDeadlines(from: now, budgetEnds: budgetEnds)
        return (budgetEnds, attemptEnds, ownTimeout)
    }

    /// An attempt begun `now`: its own timeout, and its deadline, the earlier of that and the budget's end.
    private func attemptDeadlines(from now: NIODeadline, budgetEnds: NIODeadline) -> (attemptEnds: NIODeadline, ownTimeout: NIODeadline) {
        let ownTimeout = now + .nanoseconds(attemptTimeoutNanoseconds)
        return (min(budgetEnds, ownTimeout), ownTimeout)
    }

    /// Address `index` answered, `elapsed` after its attempt began; `blamed` (those that answered SERVFAIL or REFUSED
    /// before it) failed. Nothing is recorded across a network change (`generation`).
    func succeeded(_ index: Int, generation: UInt64, elapsed: Duration, blamed: [Int] = []) {
        health.withLock { health in
            guard health.generation == generation else { return }
            health.succeeded(index, latencyNanoseconds: UInt64(max(0, elapsed.clampedNanoseconds)))
            for earlier in blamed { health.failed(earlier, now: clock.now()) }
        }
    }

    /// Runs `attempt` on the addresses in order of health until one succeeds, within the budget.
    /// - Parameters:
    ///   - subject: what is asked, for the timeout's message (`example.com`).
    ///   - describe: an address, for logs.
    ///   - resuming: a lookup begun outside: its budget, and its first attempt's failure when it failed (counted as
    ///     though it had been made here, and that address not tried again); with none, every address may be tried.
    ///   - attempt: one address's attempt, given its index and its deadline (the earlier of its own timeout and the
    ///     budget's end).
    /// - Throws: ``ResolutionError``: a rejected certificate first, else the first address's failure when all failed,
    ///   `.timeout` when the budget ran out.
    func run<Result: Sendable>(
        subject: @autoclosure () -> String,
        describe: (Int) -> String,
        resuming: Resumption? = nil,
        _ attempt: (_ index: Int, _ deadline: NIODeadline) async -> Swift.Result<Result, AttemptFailure>
    ) async throws(ResolutionError) -> Result {
        let budgetEnds = resuming?.budgetEnds ?? NIODeadline.now() + .nanoseconds(budgetNanoseconds)
        var tally = Tally()
        let (order, generation) = health.withLock { ($0.order(now: clock.now()), $0.generation) }
        let triedFirst = resuming?.failed
        if let first = triedFirst {
            try settle(
                first.failure, index: first.index, attemptEnds: first.attemptEnds, ownTimeout: first.ownTimeout, began: first.generation,
                generation: generation, tally: &tally, describe: describe
            )
        }
        for index in order where index != triedFirst?.index {
            let now = NIODeadline.now()
            // Past the budget, or the caller gone: no further address is tried (nor blamed for it).
            guard now < budgetEnds, !Task.isCancelled else { break }
            let (attemptEnds, ownTimeout) = attemptDeadlines(from: now, budgetEnds: budgetEnds)
            let started = ContinuousClock.now
            switch await attempt(index, attemptEnds) {
            case .success(let result):
                succeeded(index, generation: generation, elapsed: started.duration(to: .now), blamed: tally.unusable)
                return result
            case .failure(let failure):
                try settle(
                    failure, index: index, attemptEnds: attemptEnds, ownTimeout: ownTimeout, began: generation, generation: generation,
                    tally: &tally, describe: describe
                )
            }
        }
        if Task.isCancelled { throw ResolutionError(.timeout, "the lookup of \(subject()) was cancelled") }
        if let rejected = tally.failures.first(where: { $0.code == .certificateRejected }) { throw rejected }
        if let first = tally.failures.first, NIODeadline.now() < budgetEnds { throw first }
        let tried = tally.failures.first.map { "; the first failure: \($0.message)" } ?? ""
        throw ResolutionError(.timeout, "no \(sourceName) \(noun) answered for \(subject()) within \(budget.clampedMilliseconds) ms\(tried)")
    }

    /// What a run's failed attempts left: their errors, and the addresses that answered SERVFAIL or REFUSED (blamed if
    /// a later one answers).
    private struct Tally {
        var failures: [ResolutionError] = []
        var unusable: [Int] = []
    }

    /// Counts a failed attempt of address `index`, begun in health generation `began` (`generation` is the run's):
    /// blames the address, unless its attempt was cut short by the budget, its caller went away or the network changed
    /// since; throws when no other address may be tried.
    private func settle(
        _ failure: AttemptFailure,
        index: Int,
        attemptEnds: NIODeadline,
        ownTimeout: NIODeadline,
        began: UInt64,
        generation: UInt64,
        tally: inout Tally,
        describe: (Int) -> String
    ) throws(ResolutionError) {
        switch failure {
        case .final(let error):
            throw error
        case .tryNextAnswered(let error):
            tally.failures.append(error)
            if began == generation { tally.unusable.append(index) }
            logger.debug(
                noun == "service" ? "service address answered unusably" : "\(sourceName) \(noun) answered unusably",
                metadata: ["httpdns.\(noun)": "\(describe(index))", "error": "\(error)"]
            )
        case .tryNext(let error):
            if error.code == .shutdown { throw error }
            tally.failures.append(error)
            // An address cut short by the end of the budget, not by its own timeout, is not held to blame; nor is one
            // whose attempt began on the network before a change, nor one whose caller went away.
            if !(error.code == .timeout && attemptEnds < ownTimeout), !Task.isCancelled {
                health.withLock { health in
                    guard health.generation == began else { return }
                    health.failed(index, now: clock.now())
                }
            }
            logger.debug(
                noun == "service" ? "service address failed" : "\(sourceName) \(noun) failed",
                metadata: ["httpdns.\(noun)": "\(describe(index))", "error": "\(error)"]
            )
        }
    }

    /// Each address's failures in a row, in the configuration's order: what its cool-down follows.
    var failuresInARow: [Int] { health.withLock { $0.entries.map(\.failuresInARow) } }

    /// After a network change every address counts as healthy again.
    func reset() {
        health.withLock { $0.reset() }
    }
}
