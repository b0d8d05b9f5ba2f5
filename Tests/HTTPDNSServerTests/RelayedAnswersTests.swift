import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSTesting
import HTTPDNSWire
import Testing

@testable import HTTPDNSServer

/// The cache of relayed answers, over a scripted relay and a manual clock: the TTLs it keeps, what it asks upstream,
/// and what it serves when the upstream fails.
@Suite struct RelayedAnswersTests {
    /// Answers each query with the next scripted reply (or failure), counting what it was asked.
    final class ScriptedRelay: MessageRelaying {
        enum Reply: Sendable {
            case message(DNSMessage)
            case failure(ResolutionError)
        }

        private let replies: Mutex<[Reply]>
        let asked = Mutex(0)
        /// Holds every query until opened, so that concurrent lookups can pile up on one.
        let gate: AsyncStream<Void>
        private let opener: AsyncStream<Void>.Continuation

        init(_ replies: [Reply], gated: Bool = false) {
            self.replies = Mutex(replies)
            (gate, opener) = AsyncStream.makeStream()
            if !gated { opener.finish() }
        }

        func open() { opener.finish() }

        func send(_ query: [UInt8]) async throws -> [UInt8] {
            asked.withLock { $0 += 1 }
            for await _ in gate {}
            let reply = replies.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            let question = try DNSMessage(parsingQuery: query).questions
            switch reply {
            case .message(var message)?:
                message.questions = question
                return try message.encoded()
            case .failure(let error)?:
                throw error
            case nil:
                throw ResolutionError(.timeout, "no reply scripted")
            }
        }
    }

    static let question = DNSMessage.Question(name: "mail.test", type: .mx)

    static func answer(ttl: UInt32) -> DNSMessage {
        DNSMessage(
            id: 7, isResponse: true, questions: [question],
            answers: [.init(name: "mail.test", type: .mx, ttlSeconds: ttl, data: [0, 10, 2, 109, 120, 0])]
        )
    }

    static func negative(soaTTL: UInt32, minimum: UInt32) -> DNSMessage {
        var message = DNSMessage(id: 7, isResponse: true, responseCode: .nameError, questions: [question])
        let names: [UInt8] = [2, 110, 115, 0, 4, 104, 111, 115, 116, 0]
        let counts: [UInt32] = [1, 3600, 600, 86_400, minimum]
        message.authorities = [.init(name: "test", type: .soa, ttlSeconds: soaTTL, data: names + counts.flatMap { value in (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } })]
        return message
    }

    @Test func anAnswerIsKeptForItsTTLCountingDown() async throws {
        let relay = ScriptedRelay([.message(Self.answer(ttl: 60)), .message(Self.answer(ttl: 60))])
        let clock = ManualMonotonicClock()
        let cache = RelayedAnswers(relay: relay, clock: clock)
        guard case .answer(_, 0, 60, false) = await cache.answer(Self.question) else { Issue.record("first"); return }
        clock.advance(seconds: 25)
        guard case .answer(let answer, 25, 35, false) = await cache.answer(Self.question) else { Issue.record("second"); return }
        #expect(try DNSMessage(parsing: answer.bytes).answers.first?.ttlSeconds == 60, "the record as it came; the reply counts it down")
        #expect(relay.asked.withLock { $0 } == 1)
        clock.advance(seconds: 40)
        guard case .answer(_, 0, 60, false) = await cache.answer(Self.question) else { Issue.record("after expiry"); return }
        #expect(relay.asked.withLock { $0 } == 2)
    }

    @Test func aNegativeAnswerIsKeptForItsSOAsNegativeTTL() async throws {
        let relay = ScriptedRelay([.message(Self.negative(soaTTL: 900, minimum: 120)), .message(Self.negative(soaTTL: 900, minimum: 900))])
        let clock = ManualMonotonicClock()
        let cache = RelayedAnswers(relay: relay, clock: clock)
        guard case .answer(let answer, _, 120, false) = await cache.answer(Self.question) else { Issue.record("negative"); return }
        let message = try DNSMessage(parsing: answer.bytes)
        #expect(message.responseCode == .nameError)
        #expect(message.authorities.map(\.type) == [.soa], "the SOA is kept for the client")
        // A negative TTL past the negative clamp (300 by default) is clamped.
        clock.advance(seconds: 121)
        guard case .answer(_, _, 300, false) = await cache.answer(Self.question) else { Issue.record("clamped"); return }
    }

    @Test func aFailureIsRelayedNeverKept() async throws {
        var servfail = Self.answer(ttl: 60)
        servfail.responseCode = .serverFailure
        servfail.answers = []
        let relay = ScriptedRelay([.message(servfail), .message(Self.answer(ttl: 60))])
        let cache = RelayedAnswers(relay: relay, clock: ManualMonotonicClock())
        guard case .answer(let first, _, 0, false) = await cache.answer(Self.question) else { Issue.record("servfail"); return }
        #expect(first.responseCode == DNSMessage.ResponseCode.serverFailure.rawValue)
        guard case .answer(let second, _, 60, false) = await cache.answer(Self.question) else { Issue.record("then"); return }
        #expect(second.responseCode == DNSMessage.ResponseCode.noError.rawValue)
    }

    @Test func manyAtOnceAskUpstreamOnce() async throws {
        let relay = ScriptedRelay([.message(Self.answer(ttl: 60))], gated: true)
        let cache = RelayedAnswers(relay: relay, clock: ManualMonotonicClock())
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    if case .answer = await cache.answer(Self.question) { return true }
                    return false
                }
            }
            // The relay has been asked: its flight exists, so a lookup from now on joins it (or, once it has
            // answered, hits the cache) rather than asking again.
            while relay.asked.withLock({ $0 }) == 0 { await Task.yield() }
            relay.open()
            var answered = 0
            for try await ok in group where ok { answered += 1 }
            #expect(answered == 50)
        }
        #expect(relay.asked.withLock { $0 } == 1)
    }

    /// The byte bound: answers past it push out the least recently used, whatever the entry count allows.
    @Test func answersAreKeptWithinTheByteBound() async throws {
        let names = (0..<4).map { "n\($0).test" }
        let relay = ScriptedRelay(names.map { _ in .message(Self.answer(ttl: 60)) } + [.message(Self.answer(ttl: 60))])
        var configuration = RelayedAnswers.Configuration()
        let size = try Self.answer(ttl: 60).encoded().count
        // Three entries fit (each its answer, one TTL offset and 256 for itself), not four.
        configuration.maxBytes = 3 * (size + 8 + 256)
        let cache = RelayedAnswers(relay: relay, clock: ManualMonotonicClock(), configuration: configuration)
        for name in names { _ = await cache.answer(.init(name: name, type: .mx)) }
        #expect(relay.asked.withLock { $0 } == 4)
        // n1 to n3 are kept; n0, the oldest, went to make room for n3.
        _ = await cache.answer(.init(name: "n3.test", type: .mx))
        #expect(relay.asked.withLock { $0 } == 4)
        _ = await cache.answer(.init(name: "n0.test", type: .mx))
        #expect(relay.asked.withLock { $0 } == 5)
    }

    /// An upstream that answers SERVFAIL is failing too: the expired answer stands in for it.
    @Test func anExpiredAnswerStandsInForAnUpstreamSERVFAIL() async throws {
        var servfail = Self.answer(ttl: 60)
        servfail.responseCode = .serverFailure
        servfail.answers = []
        let relay = ScriptedRelay([.message(Self.answer(ttl: 60)), .message(servfail)])
        let clock = ManualMonotonicClock()
        let cache = RelayedAnswers(relay: relay, clock: clock)
        _ = await cache.answer(Self.question)
        clock.advance(seconds: 61)
        guard case .answer(let answer, 61, 30, true) = await cache.answer(Self.question) else { Issue.record("stale"); return }
        #expect(answer.responseCode == 0)
    }

    /// Names are keyed with ASCII letters folded, and only printable ASCII names are relayed: a Unicode folding
    /// (U+212A KELVIN SIGN to k) would let one name's answer stand for another's.
    @Test func namesAreKeyedByTheirASCIIAndOthersAreNotRelayed() async throws {
        let relay = ScriptedRelay([.message(Self.answer(ttl: 60))])
        let cache = RelayedAnswers(relay: relay, clock: ManualMonotonicClock())
        _ = await cache.answer(.init(name: "MAIL.Test", type: .mx))
        _ = await cache.answer(.init(name: "mail.test.", type: .mx))
        #expect(relay.asked.withLock { $0 } == 1)
        #expect(RelayedAnswers.canRelay("_sip._tcp.example.test"))
        #expect(!RelayedAnswers.canRelay("\u{212A}ey.test"))
        #expect(!RelayedAnswers.canRelay("caf\u{E9}.test"))
        #expect(!RelayedAnswers.canRelay("a b.test"))
        #expect(!RelayedAnswers.canRelay(""))
    }

    /// The scan reads what the cache needs and refuses what runs past the message.
    @Test func theScanFindsTheTTLsAndRefusesTruncatedMessages() throws {
        let bytes = try Self.negative(soaTTL: 900, minimum: 120).encoded()
        let scan = try AnswerScan(bytes)
        #expect(scan.responseCode == 3)
        #expect(scan.soaNegativeTTL == 120)
        #expect(scan.ttlOffsets.count == 1)
        #expect(scan.end == bytes.count)
        #expect(try AnswerScan(bytes + [0xDE, 0xAD]).end == bytes.count, "bytes after the last record are no part of it")
        for cut in [5, 20, bytes.count - 1] {
            #expect(throws: AnswerScan.Malformed.self) { try AnswerScan(Array(bytes.prefix(cut))) }
        }
    }

    /// A slow refresh gets the client's timer; then the client gets the expired answer while the refresh goes on.
    @Test func aSlowRefreshLeavesTheClientWithTheExpiredAnswer() async throws {
        let first = ScriptedRelay([.message(Self.answer(ttl: 60))])
        let clock = ManualMonotonicClock()
        var configuration = RelayedAnswers.Configuration()
        configuration.staleAnswerClientTimeoutMs = 50
        // The entry comes from a first relay; the refresh goes to a second, held until opened.
        let slow = ScriptedRelay([.message(Self.answer(ttl: 60))], gated: true)
        let switching = SwitchingRelay(first)
        let cache = RelayedAnswers(relay: switching, clock: clock, configuration: configuration)
        _ = await cache.answer(Self.question)
        switching.use(slow)
        clock.advance(seconds: 61)
        guard case .answer(_, 61, 30, true) = await cache.answer(Self.question) else { Issue.record("stale while refreshing"); return }
        slow.open()
        // The refresh lands; once it has, the answer is fresh again.
        while true {
            if case .answer(_, _, _, false) = await cache.answer(Self.question) { break }
            await Task.yield()
        }
        #expect(slow.asked.withLock { $0 } == 1)
    }

    /// After a failed refresh, the expired answer is served without asking upstream again for 30 s.
    @Test func aFailedRefreshIsNotRetriedAtOnce() async throws {
        let relay = ScriptedRelay([
            .message(Self.answer(ttl: 60)), .failure(ResolutionError(.timeout, "silent")), .message(Self.answer(ttl: 60)),
        ])
        let clock = ManualMonotonicClock()
        let cache = RelayedAnswers(relay: relay, clock: clock)
        _ = await cache.answer(Self.question)
        clock.advance(seconds: 61)
        guard case .answer(_, _, _, true) = await cache.answer(Self.question) else { Issue.record("stale"); return }
        #expect(relay.asked.withLock { $0 } == 2)
        clock.advance(seconds: 10)
        guard case .answer(_, _, _, true) = await cache.answer(Self.question) else { Issue.record("still stale"); return }
        #expect(relay.asked.withLock { $0 } == 2, "not asked again within 30 s")
        clock.advance(seconds: 21)
        guard case .answer(_, 0, 60, false) = await cache.answer(Self.question) else { Issue.record("refreshed"); return }
        #expect(relay.asked.withLock { $0 } == 3)
    }

    /// Forwards to one relay, then another.
    final class SwitchingRelay: MessageRelaying {
        private let current: Mutex<any MessageRelaying>

        init(_ relay: any MessageRelaying) {
            current = Mutex(relay)
        }

        func use(_ relay: any MessageRelaying) { current.withLock { $0 = relay } }

        func send(_ query: [UInt8]) async throws -> [UInt8] {
            let relay = current.withLock { $0 }
            return try await relay.send(query)
        }
    }

    @Test func anExpiredAnswerIsServedStaleWhileTheUpstreamFails() async throws {
        let relay = ScriptedRelay([.message(Self.answer(ttl: 60)), .failure(ResolutionError(.timeout, "silent"))])
        let clock = ManualMonotonicClock()
        let cache = RelayedAnswers(relay: relay, clock: clock)
        _ = await cache.answer(Self.question)
        clock.advance(seconds: 3600)
        guard case .answer(_, 3600, 30, true) = await cache.answer(Self.question) else { Issue.record("stale"); return }
        clock.advance(seconds: 86_400)
        guard case .failure(let error) = await cache.answer(Self.question) else { Issue.record("past the stale window"); return }
        #expect(error.code == .timeout)
    }
}
