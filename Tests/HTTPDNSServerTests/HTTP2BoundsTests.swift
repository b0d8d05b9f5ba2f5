import HTTPDNSSynchronization
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOHPACK
import Prometheus
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// What a hostile HTTP/2 client can make one connection, and the service, hold: request bodies never ended, work
/// for streams it resets, header blocks and prefaces that never end, header lists past the announced limit.
@Suite struct HTTP2BoundsTests {
    static let post = HTTP2TestClient.requestFields("/dns-query", method: "POST", extra: [("content-type", "application/dns-message")])

    private func postHeaders(_ client: HTTP2TestClient, _ stream: UInt32) throws -> ByteBuffer {
        HTTP2TestClient.frame(.headers, flags: .endHeaders, stream: stream, payload: try client.headerBlock(Self.post))
    }

    private static func data(_ stream: UInt32, _ count: Int, endStream: Bool = false) -> ByteBuffer {
        HTTP2TestClient.frame(.data, flags: endStream ? .endStream : [], stream: stream, payload: ByteBuffer(repeating: 0, count: count))
    }

    private static func windowUpdates(_ frames: [HTTP2TestClient.Frame], stream: UInt32) -> [Int] {
        frames.filter { $0.type == .windowUpdate && $0.streamID == stream }.map {
            Int($0.payload.getInteger(at: $0.payload.readerIndex, as: UInt32.self)!)
        }
    }

    // MARK: Request bodies

    @Test func unfinishedBodiesAreNotCreditedBackAndTheNewestIsRefusedPastHalfTheWindow() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture(NativeAPITests.dual))
        try await client.start()
        var bytes = try postHeaders(client, 1)
        for _ in 0..<3 { bytes.writeImmutableBuffer(Self.data(1, 16_000)) }
        try await client.send(bytes)
        var frames = try await client.drain()
        #expect(Self.windowUpdates(frames, stream: 0) == [], "48,000 bytes held: the connection's window is not topped up")
        #expect(client.connection.bodyBytesHeld == 48_000)

        // A second unfinished body takes the held bytes past half the window: the newest is refused, and only its
        // bytes come back.
        bytes = try postHeaders(client, 3)
        bytes.writeImmutableBuffer(Self.data(3, 1_000))
        try await client.send(bytes)
        frames = try await client.drain()
        #expect(frames.filter { $0.type == .rstStream }.map(\.streamID) == [3])
        #expect(frames.first { $0.type == .rstStream }?.errorCode == .refusedStream)
        #expect(Self.windowUpdates(frames, stream: 0) == [1_000])
        #expect(client.connection.bodyBytesHeld == 48_000)

        // The oldest body can always finish; once it is answered, its bytes come back too.
        try await client.send(Self.data(1, 0, endStream: true))
        let response = try await client.response(1)
        #expect(response.status == "400", "not a DNS message, but answered")
        frames = try await client.drain()
        #expect(Self.windowUpdates(frames, stream: 0) == [48_000], "\(frames)")
        #expect(client.connection.bodyBytesHeld == 0)
    }

    @Test func aBodyThatFillsTheWholeWindowGetsOneByteMoreSoItCanEndOrBeRefused() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture(NativeAPITests.dual))
        try await client.start()
        var bytes = try postHeaders(client, 1)
        for _ in 0..<3 { bytes.writeImmutableBuffer(Self.data(1, 16_384)) }
        bytes.writeImmutableBuffer(Self.data(1, 16_383))
        try await client.send(bytes)
        let frames = try await client.drain()
        #expect(Self.windowUpdates(frames, stream: 0) == [1], "65,535 bytes held, none owed: one byte of credit")
        try await client.send(Self.data(1, 1))
        #expect(try await client.response(1).status == "413", "65,536 bytes: one past the largest DNS message")
    }

    @Test func theServicesBodyBudgetIsSharedByConnectionsAndRefusesPastIt() async throws {
        let fixture = try ServiceFixture(NativeAPITests.dual)
        let budget = RequestBudget(bodyBytes: 10_000)
        let first = try await HTTP2TestClient(fixture, bodyBudget: budget)
        let second = try await HTTP2TestClient(fixture, bodyBudget: budget)
        try await first.start()
        try await second.start()
        var bytes = try postHeaders(first, 1)
        bytes.writeImmutableBuffer(Self.data(1, 8_000))
        try await first.send(bytes)
        #expect(try await first.drain().filter { $0.type == .rstStream }.isEmpty)
        #expect(budget.bytesHeld == 8_000)

        bytes = try postHeaders(second, 1)
        bytes.writeImmutableBuffer(Self.data(1, 3_000))
        try await second.send(bytes)
        let refused = try await second.drain()
        #expect(refused.filter { $0.type == .rstStream }.map(\.errorCode) == [.refusedStream], "\(refused)")
        #expect(Self.windowUpdates(refused, stream: 0) == [], "3,000 bytes credited back, not yet worth a WINDOW_UPDATE")
        #expect(second.connection.creditOwed == 3_000)
        #expect(budget.bytesHeld == 8_000)

        // The first connection's body goes when its stream does.
        var cancel = ByteBuffer()
        cancel.writeInteger(HTTPDNSServerTransport.HTTP2ErrorCode.cancel.rawValue)
        try await first.send(HTTP2TestClient.frame(.rstStream, stream: 1, payload: cancel))
        _ = try await first.drain()
        #expect(budget.bytesHeld == 0)
        try await first.channel.close()
        try await second.channel.close()
    }

    @Test func theServicesStreamBudgetRefusesStreamsPastItButNotCacheHits() async throws {
        let fixture = try ServiceFixture(NativeAPITests.dual)
        try await fixture.prime("api.example.test")
        let budget = RequestBudget(streams: 2)
        let first = try await HTTP2TestClient(fixture, bodyBudget: budget)
        let second = try await HTTP2TestClient(fixture, bodyBudget: budget)
        try await first.start()
        try await second.start()
        try await first.send(try postHeaders(first, 1))
        try await second.send(try postHeaders(second, 1))
        #expect(budget.streamsOpen == 2)
        try await second.send(try postHeaders(second, 3))
        let refused = try await second.drain()
        #expect(refused.map(\.streamID) == [3] && refused.first?.errorCode == .refusedStream, "\(refused)")
        // What the client had sent on the refused stream before it heard is ignored.
        try await second.send(Self.data(3, 10))
        let trailers = try second.headerBlock([("x-trailer", "1")])
        try await second.send(HTTP2TestClient.frame(.headers, flags: [.endHeaders, .endStream], stream: 3, payload: trailers))
        #expect(try await second.drain().filter { $0.type != .windowUpdate }.isEmpty)
        try await second.request(5, "/d?host=api.example.test")
        #expect(try await second.response(5).status == "200", "a cache hit answered as it is read takes no stream")
        try await first.channel.close()
        #expect(budget.streamsOpen == 1)
        try await second.channel.close()
        #expect(budget.streamsOpen == 0)
    }

    @Test func aCacheHitWaitingForCreditTakesAStreamOrIsRefused() async throws {
        let fixture = try ServiceFixture(NativeAPITests.dual)
        try await fixture.prime("api.example.test")
        let budget = RequestBudget(streams: 1)
        let client = try await HTTP2TestClient(fixture, bodyBudget: budget)
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 0)])
        try await client.request(1, "/d?host=api.example.test")
        #expect(try await client.drain().map(\.type) == [.headers], "its body waits for credit")
        #expect(budget.streamsOpen == 1)
        try await client.request(3, "/d?host=api.example.test")
        let refused = try await client.drain()
        #expect(refused.map(\.type) == [.rstStream] && refused.first?.errorCode == .refusedStream, "\(refused)")
        try await client.send(HTTP2TestClient.settings([(HTTP2Setting.initialWindowSize, 65_535)]))
        #expect(try await client.drain().contains { $0.streamID == 1 && $0.flags.contains(.endStream) })
        #expect(budget.streamsOpen == 0)
    }

    /// A hit handed to the connection whole (``CacheHitAnswering``'s default) that must wait for credit, refused
    /// because the service holds all its streams, was never answered: no request duration is recorded for it.
    @Test func aHitRefusedForTheStreamBudgetRecordsNoRequest() async throws {
        struct LargeHit: CacheHitAnswering {
            let requestMetrics = RequestMetrics()
            func reply(toGET target: String, channel: any Channel) -> (Reply, route: String)? {
                (Reply(contentType: "application/json", cacheControl: .noStore, body: ByteBuffer(repeating: 0x78, count: 100)), "/d")
            }
        }
        let hits = LargeHit()
        let registry = PrometheusCollectorRegistry()
        // The timer is made once, here, with this registry behind it; the connection's hits find it made.
        withMetricsFactory(PrometheusMetricsFactory(registry: registry)) {
            hits.requestMetrics.record(route: "/d", method: .get, status: .ok, since: .now)
        }
        let budget = RequestBudget(streams: 1)
        let client = try await HTTP2TestClient(try ServiceFixture(), cacheHits: hits, bodyBudget: budget)
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 10)])
        try await client.request(1, "/d?host=api.example.test")
        try await client.request(3, "/d?host=api.example.test")
        let frames = try await client.drain()
        #expect(frames.contains { $0.streamID == 3 && $0.errorCode == .refusedStream }, "\(frames)")
        var text: [UInt8] = []
        registry.emit(into: &text)
        let count = #"http_server_request_duration_seconds_count{route="/d",method="GET",status="200"}"#
        #expect(String(decoding: text, as: UTF8.self).contains("\(count) 2"), "the one recorded here and stream 1's")
    }

    @Test func aConnectionThatClosesLetsGoOfItsBodies() async throws {
        let budget = RequestBudget(bodyBytes: 1 << 20)
        let client = try await HTTP2TestClient(try ServiceFixture(NativeAPITests.dual), bodyBudget: budget)
        try await client.start()
        var bytes = ByteBuffer()
        for stream: UInt32 in [1, 3, 5] {
            bytes.writeImmutableBuffer(try postHeaders(client, stream))
            bytes.writeImmutableBuffer(Self.data(stream, 5_000))
        }
        try await client.send(bytes)
        _ = try await client.drain()
        #expect(budget.bytesHeld == 15_000)
        try await client.channel.close()
        #expect(budget.bytesHeld == 0)
    }

    @Test func requestsLeftUnfinishedOverAReadPastTheLimitAreRefused() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture(NativeAPITests.dual)) { $0.maxUnfinishedRequests = 10 }
        try await client.start()
        // As nghttp2 sends a batch: every HEADERS first, then every body, here in two reads. Nothing is refused.
        var headers = ByteBuffer()
        var bodies = ByteBuffer()
        let ids = (0..<20).map { UInt32(1 + 2 * $0) }
        for id in ids {
            headers.writeImmutableBuffer(try postHeaders(client, id))
            bodies.writeImmutableBuffer(Self.data(id, 12, endStream: true))
        }
        try await client.send(headers)
        try await client.send(bodies)
        for id in ids {
            let response = try await client.response(id)
            #expect(response.status != nil && response.reset == nil, "stream \(id) answered, not refused: \(response)")
        }

        // Twelve requests left hanging: when the read after theirs ends, the two newest are refused.
        var hanging = ByteBuffer()
        let more = (20..<32).map { UInt32(1 + 2 * $0) }
        for id in more { hanging.writeImmutableBuffer(try postHeaders(client, id)) }
        try await client.send(hanging)
        #expect(try await client.drain().filter { $0.type == .rstStream }.isEmpty, "not in the read they came in")
        try await client.send(HTTP2TestClient.frame(.ping, stream: 0, payload: ByteBuffer(repeating: 0, count: 8)))
        let frames = try await client.drain()
        #expect(frames.filter { $0.type == .rstStream }.map(\.streamID) == Array(more.suffix(2)), "\(frames)")
        #expect(frames.allSatisfy { $0.type != .rstStream || $0.errorCode == .refusedStream })
    }

    // MARK: Streams reset while the router works

    @Test func routerWorkForAResetStreamCountsAgainstTheStreamLimitUntilItEnds() async throws {
        let router = HeldRouter()
        let client = try await HTTP2TestClient(try ServiceFixture(NativeAPITests.dual), router: router) { $0.maxConcurrentStreams = 2 }
        try await client.start()
        try await client.request(1, "/held")
        await router.waitForRequests(1)
        var cancel = ByteBuffer()
        cancel.writeInteger(HTTPDNSServerTransport.HTTP2ErrorCode.cancel.rawValue)
        try await client.send(HTTP2TestClient.frame(.rstStream, stream: 1, payload: cancel))
        try await client.request(3, "/held")
        await router.waitForRequests(2)
        try await client.request(5, "/held")
        let frames = try await client.drain()
        #expect(frames.map(\.streamID) == [5] && frames.first?.errorCode == .refusedStream, "\(frames)")
        #expect(client.connection.occupiedStreams == 2, "stream 3, and the router still working for stream 1")
        router.releaseAll()
        let answered = try await client.response(3)
        #expect(answered.status == "204")
        // Once every task has ended, nothing is counted any more.
        // On the testing loop, which runs inside this task: nothing else touches the connection meanwhile.
        nonisolated(unsafe) let connection = client.connection
        let settled = try await client.channel.eventLoop.submit { connection.closedAndSettled() }.get()
        try await client.channel.close()
        try await settled.get()
        #expect(client.connection.occupiedStreams == 0)
        #expect(client.connection.routerWorkWithoutStream.isEmpty)
    }

    @Test func aBodyTheRouterStillHoldsAfterAResetStaysCounted() async throws {
        let router = HeldRouter()
        let budget = RequestBudget(bodyBytes: 1 << 20)
        let client = try await HTTP2TestClient(try ServiceFixture(NativeAPITests.dual), router: router, bodyBudget: budget)
        try await client.start()
        var bytes = try postHeaders(client, 1)
        bytes.writeImmutableBuffer(Self.data(1, 5_000, endStream: true))
        try await client.send(bytes)
        await router.waitForRequests(1)
        var cancel = ByteBuffer()
        cancel.writeInteger(HTTPDNSServerTransport.HTTP2ErrorCode.cancel.rawValue)
        try await client.send(HTTP2TestClient.frame(.rstStream, stream: 1, payload: cancel))
        let frames = try await client.drain()
        #expect(budget.bytesHeld == 5_000, "the router still has the body: \(frames)")
        #expect(Self.windowUpdates(frames, stream: 0) == [])
        // On the testing loop, which runs inside this task: nothing else touches the connection meanwhile.
        nonisolated(unsafe) let connection = client.connection
        let settled = try await client.channel.eventLoop.submit { connection.closedAndSettled() }.get()
        router.releaseAll()
        try await client.channel.close()
        try await settled.get()
        #expect(budget.bytesHeld == 0)
    }

    @Test func glitchesAreBoundedOverTheConnectionsLife() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) {
            $0.maxGlitches = 1_000
            $0.maxGlitchesPerConnection = 3
        }
        try await client.start()
        var cancel = ByteBuffer()
        cancel.writeInteger(HTTPDNSServerTransport.HTTP2ErrorCode.cancel.rawValue)
        for stream: UInt32 in stride(from: 1, through: 7, by: 2) {
            try await client.request(stream, "/dns-query", method: "POST", endStream: false)
            try await client.send(HTTP2TestClient.frame(.rstStream, stream: stream, payload: cancel))
            // The window starts again; the lifetime count does not.
            await client.channel.testingEventLoop.advanceTime(by: .seconds(31))
        }
        let frames = try await client.drain()
        #expect(frames.last?.type == .goAway && frames.last?.errorCode == .enhanceYourCalm, "\(frames)")
    }

    // MARK: Headers

    @Test func aHeaderListPastTheAnnouncedLimitGets431AndTheConnectionGoesOn() async throws {
        let fixture = try ServiceFixture(NativeAPITests.dual)
        try await fixture.prime("api.example.test")
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        // 18 KiB decoded, past the 16 KiB announced; HPACK's table makes the block itself small.
        let big = Array(repeating: ("x-filler", String(repeating: "a", count: 3_000)), count: 6)
        try await client.request(1, "/d?host=api.example.test", extra: big)
        let refused = try await client.response(1)
        #expect(refused.status == "431")
        try await client.request(3, "/d?host=api.example.test")
        #expect(try await client.response(3).status == "200", "the connection and its HPACK state go on")
    }

    @Test func aHeaderListPastWhatIsDecodedAtAllEndsTheConnection() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.start()
        // 90 KiB decoded from a block of a few: each repeat is an index into HPACK's table (an "HPACK bomb").
        let huge = Array(repeating: ("x-filler", String(repeating: "a", count: 3_000)), count: 30)
        let block = try client.headerBlock(HTTP2TestClient.requestFields("/healthz", extra: huge))
        #expect(block.readableBytes < 16_384)
        try await client.send(HTTP2TestClient.frame(.headers, flags: [.endHeaders, .endStream], stream: 1, payload: block))
        let goAway = try await client.next()
        #expect(goAway.type == .goAway && goAway.errorCode == .compressionError)
    }

    @Test func aHeaderBlockThatNeverEndsEndsTheConnectionAtTheHeaderTimeout() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.headerTimeout = .seconds(10) }
        try await client.start()
        let block = try client.headerBlock(HTTP2TestClient.requestFields("/healthz"))
        try await client.send(HTTP2TestClient.frame(.headers, stream: 1, payload: block.getSlice(at: 0, length: 5)!))
        await client.channel.testingEventLoop.advanceTime(by: .seconds(9))
        #expect(try await client.drain().isEmpty)
        await client.channel.testingEventLoop.advanceTime(by: .seconds(1))
        let goAway = try await client.next()
        #expect(goAway.type == .goAway && goAway.errorCode == .protocolError)
        try await client.waitForClose()
    }

    @Test func aHeaderBlockCompletedInTimeEndsItsDeadline() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.headerTimeout = .seconds(10) }
        try await client.start()
        let block = try client.headerBlock(HTTP2TestClient.requestFields("/healthz"))
        try await client.send(HTTP2TestClient.frame(.headers, flags: .endStream, stream: 1, payload: block.getSlice(at: 0, length: 5)!))
        await client.channel.testingEventLoop.advanceTime(by: .seconds(9))
        let rest = block.getSlice(at: 5, length: block.readableBytes - 5)!
        try await client.send(HTTP2TestClient.frame(.continuation, flags: .endHeaders, stream: 1, payload: rest))
        #expect(try await client.response(1).status == "200")
        await client.channel.testingEventLoop.advanceTime(by: .seconds(5))
        #expect(client.channel.isActive, "the deadline ended with the block")
    }

    @Test func aHeadersFrameSentSlowlyHasTheHeaderTimeoutToo() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.headerTimeout = .seconds(10) }
        try await client.start()
        let frame = HTTP2TestClient.frame(.headers, flags: [.endHeaders, .endStream], stream: 1, payload: try client.headerBlock(HTTP2TestClient.requestFields("/healthz")))
        try await client.send(frame.getSlice(at: 0, length: 12)!)
        await client.channel.testingEventLoop.advanceTime(by: .seconds(10))
        let goAway = try await client.next()
        #expect(goAway.type == .goAway && goAway.errorCode == .protocolError)
    }

    @Test func thePrefaceMustArriveWithinTheHeaderTimeout() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.headerTimeout = .seconds(10) }
        try await client.send(ByteBuffer(bytes: HTTP2Limits.clientPreface.prefix(10)))
        await client.channel.testingEventLoop.advanceTime(by: .seconds(10))
        let frames = try await client.drain()
        #expect(frames.map(\.type) == [.settings, .goAway])
        try await client.waitForClose()
    }

    @Test func aConnectionThatStartedWellIsNotTimedBetweenRequests() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.headerTimeout = .seconds(10) }
        try await client.start()
        await client.channel.testingEventLoop.advanceTime(by: .seconds(30))
        try await client.request(1, "/healthz")
        #expect(try await client.response(1).status == "200")
    }

    @Test func aWrongPrefaceIsToldAtItsFirstWrongByte() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.send(ByteBuffer(string: "PRI * HTTP/1.1"))
        let frames = try await client.drain()
        #expect(frames.map(\.type) == [.settings, .goAway], "14 bytes, 10 of them right, are enough")
        #expect(frames.last?.errorCode == .protocolError)
        try await client.waitForClose()
    }
}

/// A router whose responses wait until the test releases them, ignoring cancellation: work that goes on after the
/// client has reset its stream.
final class HeldRouter: RouterResponding {
    let maxBodyBytes = 65_535
    let logger = Logger(label: "httpdns.test")
    private let state = Mutex<(started: Int, released: Bool, gates: [CheckedContinuation<Void, Never>], waiters: [(Int, CheckedContinuation<Void, Never>)])>(
        (0, false, [], [])
    )

    func respond(to request: Request, channel: any Channel) async -> Response {
        await withCheckedContinuation { gate in
            let resume: [CheckedContinuation<Void, Never>] = state.withLock { state in
                state.started += 1
                if state.released { return [gate] }
                state.gates.append(gate)
                let ready = state.waiters.filter { $0.0 <= state.started }
                state.waiters.removeAll { $0.0 <= state.started }
                return ready.map(\.1)
            }
            for continuation in resume { continuation.resume() }
        }
        return Response(status: .noContent)
    }

    /// How many requests have reached the router.
    var requestsStarted: Int { state.withLock { $0.started } }

    /// Returns once `count` requests have reached the router.
    func waitForRequests(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if state.started >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func releaseAll() {
        let gates = state.withLock { state in
            state.released = true
            defer { state.gates.removeAll() }
            return state.gates
        }
        for gate in gates { gate.resume() }
    }
}
