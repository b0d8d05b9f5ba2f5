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

    /// Runs `attempt` on the addresses in order of health until one succeeds, within the budget.
    /// - Parameters:
    ///   - subject: what is asked, for the timeout's message (`example.com`).
    ///   - describe: an address, for logs.
    ///   - attempt: one address's attempt, given its index and its deadline (the earlier of its own timeout and the
    ///     budget's end).
    /// - Throws: ``ResolutionError``: a rejected certificate first, else the first address's failure when all failed,
    ///   `.timeout` when the budget ran out.
    func run<Result: Sendable>(
        subject: @autoclosure () -> String,
        describe: (Int) -> String,
        _ attempt: (_ index: Int, _ deadline: NIODeadline) async -> Swift.Result<Result, AttemptFailure>
    ) async throws(ResolutionError) -> Result {
        let budgetEnds = NIODeadline.now() + .nanoseconds(budgetNanoseconds)
        var failures: [ResolutionError] = []
        // Addresses that answered SERVFAIL or REFUSED: blamed if a later one answers.
        var unusable: [Int] = []
        let (order, generation) = health.withLock { ($0.order(now: clock.now()), $0.generation) }
        for index in order {
            let now = NIODeadline.now()
            // Past the budget, or the caller gone: no further address is tried (nor blamed for it).
            guard now < budgetEnds, !Task.isCancelled else { break }
            let ownTimeout = now + .nanoseconds(attemptTimeoutNanoseconds)
            let attemptEnds = min(budgetEnds, ownTimeout)
            let started = ContinuousClock.now
            switch await attempt(index, attemptEnds) {
            case .success(let result):
                let elapsed = started.duration(to: .now)
                health.withLock { health in
                    guard health.generation == generation else { return }
                    health.succeeded(index, latencyNanoseconds: UInt64(max(0, elapsed.clampedNanoseconds)))
                    for earlier in unusable { health.failed(earlier, now: clock.now()) }
                }
                return result
            case .failure(.final(let error)):
                throw error
            case .failure(.tryNextAnswered(let error)):
                failures.append(error)
                unusable.append(index)
                logger.debug(
                    noun == "service" ? "service address answered unusably" : "\(sourceName) \(noun) answered unusably",
                    metadata: ["httpdns.\(noun)": "\(describe(index))", "error": "\(error)"]
                )
            case .failure(.tryNext(let error)):
                if error.code == .shutdown { throw error }
                failures.append(error)
                // An address cut short by the end of the budget, not by its own timeout, is not held to blame; nor is
                // one whose attempt began on the network before a change, nor one whose caller went away.
                if !(error.code == .timeout && attemptEnds < ownTimeout), !Task.isCancelled {
                    health.withLock { health in
                        guard health.generation == generation else { return }
                        health.failed(index, now: clock.now())
                    }
                }
                logger.debug(
                    noun == "service" ? "service address failed" : "\(sourceName) \(noun) failed",
                    metadata: ["httpdns.\(noun)": "\(describe(index))", "error": "\(error)"]
                )
            }
        }
        if Task.isCancelled { throw ResolutionError(.timeout, "the lookup of \(subject()) was cancelled") }
        if let rejected = failures.first(where: { $0.code == .certificateRejected }) { throw rejected }
        if let first = failures.first, NIODeadline.now() < budgetEnds { throw first }
        let tried = failures.first.map { "; the first failure: \($0.message)" } ?? ""
        throw ResolutionError(.timeout, "no \(sourceName) \(noun) answered for \(subject()) within \(budget.clampedMilliseconds) ms\(tried)")
    }

    /// Each address's failures in a row, in the configuration's order: what its cool-down follows.
    var failuresInARow: [Int] { health.withLock { $0.entries.map(\.failuresInARow) } }

    /// After a network change every address counts as healthy again.
    func reset() {
        health.withLock { $0.reset() }
    }
}
