import HTTPDNSCore
import HTTPDNSSynchronization

/// A `ResolutionSource` whose answers the test writes, for driving `ResolverCache` deterministically.
///
/// - Answers and errors are scripted per host (`script`, `fail`); a host without a script fails with
///   `.serverFailure`, so a test never gets an answer it did not ask for.
/// - Every query is counted per host and per (host, families).
/// - `hold(_:)` makes queries for a host wait until `release(_:)`; the reply is read when the query is released,
///   so a test may change the script while a query is held.
/// - `waitForQueries(_:count:)` suspends until that many queries for a host have *started* (and, for a held host,
///   are parked waiting for `release`). It is a real signal (a continuation resumed by the query), not a sleep.
public final class ScriptedSource: ResolutionSource {
    /// What a query for one host returns.
    public enum Reply: Sendable {
        /// The answer for each family; only the families asked are returned.
        case answer(ipv4: FamilyAnswer<IPv4Address>?, ipv6: FamilyAnswer<IPv6Address>?)
        /// The query fails with this error.
        case failure(ResolutionError)
    }

    struct QueryKey: Hashable, Sendable {
        let host: String
        let families: AddressFamilies
    }

    private struct CountWaiter {
        let id: Int
        let host: String
        let count: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var replies: [String: Reply] = [:]
        var counts: [QueryKey: Int] = [:]
        var started: [String: Int] = [:]
        var holding: Set<String> = []
        var parked: [String: [CheckedContinuation<Void, Never>]] = [:]
        var countWaiters: [CountWaiter] = []
        var nextWaiterID = 0

        /// Removes and returns the waiters whose count has been reached.
        mutating func satisfiedWaiters() -> [CheckedContinuation<Void, Never>] {
            var ready: [CheckedContinuation<Void, Never>] = []
            countWaiters.removeAll { waiter in
                guard started[waiter.host, default: 0] >= waiter.count else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
    }

    public let name: String
    private let state = Mutex(State())

    public init(name: String = "scripted") {
        self.name = name
    }

    // MARK: Scripting

    /// Sets the reply for `host`, replacing any earlier one.
    public func script(_ host: String, _ reply: Reply) {
        state.withLock { $0.replies[host] = reply }
    }

    /// Scripts per-family answers for `host`.
    public func script(_ host: String, ipv4: FamilyAnswer<IPv4Address>? = nil, ipv6: FamilyAnswer<IPv6Address>? = nil) {
        script(host, .answer(ipv4: ipv4, ipv6: ipv6))
    }

    /// Scripts the given addresses for both families, with one TTL.
    public func script(_ host: String, ipv4: [String], ipv6: [String] = [], ttl: UInt32) {
        script(
            host,
            ipv4: .addresses(ipv4.map { Self.literal($0, IPv4Address.init) }, ttlSeconds: ttl),
            ipv6: .addresses(ipv6.map { Self.literal($0, IPv6Address.init) }, ttlSeconds: ttl)
        )
    }

    /// An address from a test's own literal. A literal that is no address is a mistake in the test, found at once.
    private static func literal<Address>(_ text: String, _ parse: (String) -> Address?) -> Address {
        guard let address = parse(text) else { fatalError("ScriptedSource: '\(text)' is not an address of its family") }
        return address
    }

    /// Scripts the same negative answer for both families.
    public func scriptNegative(_ host: String, _ kind: NegativeAnswer, ttl: UInt32? = nil) {
        script(host, ipv4: .negative(kind, ttlSeconds: ttl), ipv6: .negative(kind, ttlSeconds: ttl))
    }

    /// Makes queries for `host` fail with `code`.
    public func fail(_ host: String, with code: ResolutionError.Code) {
        script(host, .failure(ResolutionError(code, "scripted \(code) for \(host)")))
    }

    // MARK: Holding

    /// Queries for `host` that start from now on wait until `release(host)`.
    public func hold(_ host: String) {
        state.withLock { _ = $0.holding.insert(host) }
    }

    /// Stops holding `host` and lets every parked query for it go on.
    public func release(_ host: String) {
        let parked = state.withLock { state in
            state.holding.remove(host)
            return state.parked.removeValue(forKey: host) ?? []
        }
        for continuation in parked { continuation.resume() }
    }

    /// Returns once at least `count` queries for `host` have started (held ones are parked by then).
    ///
    /// Throws if the waiting task is cancelled first (as a test's time limit does), so a query that never comes
    /// fails the test instead of hanging the run.
    public func waitForQueries(_ host: String, count: Int = 1) async throws(QueriesNotStarted) {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    guard state.started[host, default: 0] < count, !Task.isCancelled else { return true }
                    state.countWaiters.append(CountWaiter(id: id, host: host, count: count, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.countWaiters.firstIndex { $0.id == id }.map { state.countWaiters.remove(at: $0) }
            }
            waiter?.continuation.resume()
        }
        let started = queryCount(host)
        if started < count {
            throw QueriesNotStarted(host: host, expected: count, started: started)
        }
    }

    // MARK: Counting

    /// Queries started for `host` with exactly `families`.
    public func queryCount(_ host: String, families: AddressFamilies) -> Int {
        state.withLock { $0.counts[QueryKey(host: host, families: families), default: 0] }
    }

    /// Queries started for `host`, whatever the families.
    public func queryCount(_ host: String) -> Int {
        state.withLock { $0.started[host, default: 0] }
    }

    /// Queries started for any host.
    public var totalQueryCount: Int {
        state.withLock { $0.started.values.reduce(0, +) }
    }

    // MARK: ResolutionSource

    public func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        let name = host.value
        // Count the query, and park it if the host is held, in one critical section: when `waitForQueries`
        // returns for a held host, the query is already parked.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (isHeld, ready) = state.withLock { state in
                state.counts[QueryKey(host: name, families: families), default: 0] += 1
                state.started[name, default: 0] += 1
                let isHeld = state.holding.contains(name)
                if isHeld { state.parked[name, default: []].append(continuation) }
                return (isHeld, state.satisfiedWaiters())
            }
            for waiter in ready { waiter.resume() }
            if !isHeld { continuation.resume() }
        }
        let reply = state.withLock { $0.replies[name] }
        switch reply {
        case nil:
            throw ResolutionError(.serverFailure, "ScriptedSource has no script for \(name)")
        case .failure(let error):
            throw error
        case .answer(let ipv4, let ipv6):
            return SourceAnswer(
                ipv4: families.contains(.ipv4) ? ipv4 : nil,
                ipv6: families.contains(.ipv6) ? ipv6 : nil
            )
        }
    }
}

/// The wait for queries ended, cancelled, before they had all started.
public struct QueriesNotStarted: Error, CustomStringConvertible {
    public let host: String
    public let expected: Int
    public let started: Int

    public var description: String { "cancelled while waiting for \(expected) queries for \(host); \(started) started" }
}
