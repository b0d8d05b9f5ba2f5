import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSTesting
import Logging
import Testing

/// `FailoverSource`'s selection policy, with scripted sources standing in for failing upstreams (fault injection:
/// the real sources' own failover is tested against unbound, and the service's use of this against real peers).
@Suite struct FailoverSourceTests {
    /// A source that answers or fails as told, and counts what it was asked.
    final class Scripted: ResolutionSource, MessageRelaying {
        enum Behaviour: Sendable {
            case answer
            case fail(ResolutionError.Code)
            /// A relayed answer with this RCODE.
            case rcode(UInt8)
        }

        let name: String
        private let state: Mutex<(behaviour: Behaviour, asked: Int, shutDown: Bool)>

        init(_ name: String, _ behaviour: Behaviour = .answer) {
            self.name = name
            state = Mutex((behaviour, 0, false))
        }

        var asked: Int { state.withLock { $0.asked } }
        var shutDown: Bool { state.withLock { $0.shutDown } }
        func behave(_ behaviour: Behaviour) { state.withLock { $0.behaviour = behaviour } }

        private func next() -> Behaviour {
            state.withLock {
                $0.asked += 1
                return $0.behaviour
            }
        }

        func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
            switch next() {
            case .answer, .rcode(0): return SourceAnswer(ipv4: .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 60))
            case .fail(let code): throw ResolutionError(code, "\(name) failed with \(code)")
            case .rcode(let rcode): throw ResolutionError(rcode == 2 ? .serverFailure : .refused, "\(name) answered \(rcode)")
            }
        }

        func send(_ query: [UInt8]) async throws -> [UInt8] {
            switch next() {
            case .answer: return Self.answer(rcode: 0, from: name)
            case .fail(let code): throw ResolutionError(code, "\(name) failed with \(code)")
            case .rcode(let rcode): return Self.answer(rcode: rcode, from: name)
            }
        }

        /// A DNS header whose ID's first byte says which source answered: 1 for `a`, 2 for `b`, 3 for `c`.
        static func answer(rcode: UInt8, from name: String) -> [UInt8] {
            [UInt8(name.unicodeScalars.first!.value - 96), 0, 0x81, 0x80 | rcode] + Array(repeating: 0, count: 8)
        }

        func shutdown() async { state.withLock { $0.shutDown = true } }
    }

    static let host = try! HostName("failover.test")
    static let query = [UInt8](repeating: 0, count: 12)

    /// The code of the error `body` throws; nil if it throws none.
    static func code(_ body: () async throws -> some Any) async -> ResolutionError.Code? {
        do {
            _ = try await body()
            return nil
        } catch {
            return (error as? ResolutionError)?.code ?? .internalError
        }
    }

    static func failover(_ sources: [Scripted], plain: Set<Int> = [], clock: ManualMonotonicClock) -> FailoverSource {
        FailoverSource(sources: sources, plain: plain, clock: clock, logger: Logger(label: "test"))
    }

    /// The first source answers while it works; a failing one is passed over for its cool-down (1 s, then 2 s), then
    /// asked first again; the order given is kept whatever the latency.
    @Test func theFirstHealthySourceAnswersAndAFailedOneCoolsDown() async throws {
        let clock = ManualMonotonicClock()
        let (a, b) = (Scripted("a"), Scripted("b"))
        let failover = Self.failover([a, b], clock: clock)
        #expect(failover.name == "a+b")
        _ = try await failover.query(Self.host, families: .all)
        #expect((a.asked, b.asked) == (1, 0))

        a.behave(.fail(.timeout))
        _ = try await failover.query(Self.host, families: .all)
        #expect((a.asked, b.asked) == (2, 1), "a failed, b answered")
        _ = try await failover.query(Self.host, families: .all)
        #expect((a.asked, b.asked) == (2, 2), "a is cooling down")
        clock.advance(seconds: 1.1)
        _ = try await failover.query(Self.host, families: .all)
        #expect((a.asked, b.asked) == (3, 3), "a is probed after its cool-down, fails again")
        #expect(failover.failuresInARow == [2, 0])
        clock.advance(seconds: 1.1)
        _ = try await failover.query(Self.host, families: .all)
        #expect((a.asked, b.asked) == (3, 4), "the second cool-down is 2 s")

        a.behave(.answer)
        clock.advance(seconds: 1)
        _ = try await failover.query(Self.host, families: .all)
        #expect((a.asked, b.asked) == (4, 4), "a answers first again")
        #expect(failover.failuresInARow == [0, 0])
    }

    /// When every source fails, a rejected certificate is reported above the others, else the first failure; a
    /// query that no source can answer differently is not passed on.
    @Test func failuresAreReportedAndFinalOnesNotPassedOn() async throws {
        let clock = ManualMonotonicClock()
        let (a, b) = (Scripted("a", .fail(.timeout)), Scripted("b", .fail(.certificateRejected)))
        let failover = Self.failover([a, b], clock: clock)
        #expect(await Self.code { try await failover.query(Self.host, families: .all) } == .certificateRejected)
        b.behave(.fail(.serverUnreachable))
        clock.advance(seconds: 10)
        #expect(await Self.code { try await failover.send(Self.query) } == .timeout)

        let (c, d) = (Scripted("c", .fail(.badName)), Scripted("d"))
        let final = Self.failover([c, d], clock: clock)
        #expect(await Self.code { try await final.send(Self.query) } == .badName)
        #expect((c.asked, d.asked) == (1, 0))
        #expect(final.failuresInARow == [0, 0], "the query's fault is no source's")
    }

    /// SERVFAIL or REFUSED moves on, and cools no source down (a client could otherwise push everyone's queries off a
    /// validating resolver by asking for a name it fails); with no better answer, the first of them is the answer.
    @Test func aRefusalMovesOnAndCoolsNoSourceDown() async throws {
        let clock = ManualMonotonicClock()
        let (a, b, c) = (Scripted("a", .rcode(5)), Scripted("b", .rcode(2)), Scripted("c", .fail(.timeout)))
        let failover = Self.failover([a, b, c], clock: clock)
        let relayed = try await failover.send(Self.query)
        #expect(relayed[0] == 1 && relayed[3] & 0x0F == 5, "the first refusal, from a")
        #expect(failover.failuresInARow == [0, 0, 1])
        #expect(await Self.code { try await failover.query(Self.host, families: .all) } == .refused)

        c.behave(.answer)
        clock.advance(seconds: 5)
        let answered = try await failover.send(Self.query)
        #expect(answered[0] == 3 && answered[3] & 0x0F == 0, "c answered")
        #expect(failover.failuresInARow == [0, 0, 0], "a and b refused what c answered, and are still asked first")
        _ = try await failover.send(Self.query)
        #expect((a.asked, b.asked, c.asked) == (4, 4, 4))
    }

    /// A plain source is asked only when the encrypted ones before it gave no answer at all: never after a refused
    /// certificate (an attack on the path, which a plain fallback would complete), nor after SERVFAIL or REFUSED.
    @Test func aPlainSourceIsNoFallbackFromARefusedCertificateOrARefusal() async throws {
        let clock = ManualMonotonicClock()
        let (a, plain) = (Scripted("a", .fail(.certificateRejected)), Scripted("b"))
        let failover = Self.failover([a, plain], plain: [1], clock: clock)
        #expect(await Self.code { try await failover.query(Self.host, families: .all) } == .certificateRejected)
        #expect(await Self.code { try await failover.send(Self.query) } == .certificateRejected, "a is cooling down, still not b")
        #expect(plain.asked == 0)

        a.behave(.rcode(2))
        clock.advance(seconds: 10)
        let relayed = try await failover.send(Self.query)
        #expect(relayed[0] == 1 && relayed[3] & 0x0F == 2, "a's SERVFAIL is the answer")
        #expect(await Self.code { try await failover.query(Self.host, families: .all) } == .serverFailure)
        #expect(plain.asked == 0)

        a.behave(.fail(.tooManyPendingQueries))
        #expect(await Self.code { try await failover.query(Self.host, families: .all) } == .tooManyPendingQueries)
        #expect(plain.asked == 0, "a flood of queries does not push them into plain text")

        a.behave(.fail(.timeout))
        _ = try await failover.query(Self.host, families: .all)
        #expect(plain.asked == 1, "a gave no answer at all: the plain source is asked")
    }

    /// A plain source listed first is asked first, and the rule binds only plain sources listed after a refused
    /// encrypted one; a refused certificate is reported above a plain source's SERVFAIL.
    @Test func theRuleBindsOnlyPlainSourcesListedAfter() async throws {
        let clock = ManualMonotonicClock()
        let (plainFirst, encrypted, plainLast) = (Scripted("a", .rcode(2)), Scripted("b", .fail(.certificateRejected)), Scripted("c"))
        let failover = Self.failover([plainFirst, encrypted, plainLast], plain: [0, 2], clock: clock)
        #expect(await Self.code { try await failover.query(Self.host, families: .all) } == .certificateRejected)
        #expect((plainFirst.asked, encrypted.asked, plainLast.asked) == (1, 1, 0))
        plainFirst.behave(.answer)
        _ = try await failover.query(Self.host, families: .all)
        #expect(plainFirst.asked == 2, "the plain source listed first answers")
    }

    /// A network change forgets the cool-downs; shutting down shuts every source down.
    @Test func aNetworkChangeForgetsAndShutdownReachesEverySource() async throws {
        let clock = ManualMonotonicClock()
        let (a, b) = (Scripted("a", .fail(.serverUnreachable)), Scripted("b"))
        let failover = Self.failover([a, b], clock: clock)
        _ = try await failover.query(Self.host, families: .all)
        a.behave(.answer)
        _ = try await failover.query(Self.host, families: .all)
        #expect((a.asked, b.asked) == (1, 2))
        await failover.networkChanged()
        _ = try await failover.query(Self.host, families: .all)
        #expect((a.asked, b.asked) == (2, 2))
        await failover.shutdown()
        #expect(a.shutDown && b.shutDown)
    }
}
