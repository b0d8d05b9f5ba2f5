import HTTPDNSCore
import HTTPDNSTesting
import NIOCore
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// `/d` and `/dns-query` GETs the cache misses, looked up on the HTTP/2 connection without the router or a task
/// (``CacheMiss``): answered as the router would answer them, and their streams bounded, reset, drained and closed as
/// the router's are. The router here is one that never answers, so a request that reached it would hang.
@Suite struct HTTP2LookUpTests {
    static let host = "held.example.test"

    /// A source whose queries for ``host`` wait until the test releases them.
    private static func heldSource() -> ScriptedSource {
        let source = ScriptedSource()
        source.script(host, ipv4: ["192.0.2.20"], ttl: 60)
        source.hold(host)
        return source
    }

    /// Returns once no lookup (and no router task) is running on `client`'s connection.
    private static func settled(_ client: HTTP2TestClient) async throws {
        // On the testing loop, which runs inside this task: nothing else touches the connection meanwhile.
        nonisolated(unsafe) let connection = client.connection
        let loop = client.channel.eventLoop
        let idle = try await loop.submit { connection.routerTasksIdle(on: loop) }.get()
        try await withTimeout { try await idle.get() }
    }

    @Test func aMissIsAnsweredOnTheConnectionNotByTheRouter() async throws {
        let source = Self.heldSource()
        let router = HeldRouter()
        let client = try await HTTP2TestClient(try ServiceFixture(upstream: source), router: router)
        try await client.start()
        try await client.request(1, "/d?host=\(Self.host)")
        try await source.waitForQueries(Self.host)
        #expect(client.connection.occupiedStreams == 1, "the stream is in the table while its lookup runs")
        #expect(client.connection.routerTasksRunning == 1, "and the lookup is counted as the router's work is")
        source.release(Self.host)
        let response = try await client.response(1)
        #expect(response.status == "200")
        #expect(response.text == #"{"host":"held.example.test","ips":["192.0.2.20"],"ttl":60,"origin_ttl":60}"#)
        #expect(response.headers.first(name: "cache-control") == "max-age=60")
        #expect(response.headers.first(name: "date") != nil)
        try await Self.settled(client)
        #expect(client.connection.occupiedStreams == 0)
        #expect(router.requestsStarted == 0)
    }

    @Test func aDoHMissIsAnsweredOnTheConnection() async throws {
        let source = Self.heldSource()
        let router = HeldRouter()
        let client = try await HTTP2TestClient(try ServiceFixture(upstream: source), router: router)
        try await client.start()
        let query = DoHAPITests.query(Self.host, type: 1)
        try await client.request(1, "/dns-query?dns=\(DoHAPITests.base64URL(query))")
        try await source.waitForQueries(Self.host)
        source.release(Self.host)
        let response = try await client.response(1)
        #expect(response.status == "200")
        #expect(response.headers.first(name: "content-type") == "application/dns-message")
        let answer = try DoHAPITests.Decoded(Array(buffer: response.body))
        #expect(answer.id == 0 && answer.rcode == 0)
        #expect(answer.answers.map(\.type) == [1] && answer.answers.first?.data == [192, 0, 2, 20])
        #expect(router.requestsStarted == 0)
    }

    @Test func aFailedLookupIsA503AsTheRouterGivesIt() async throws {
        let source = ScriptedSource()
        source.fail(Self.host, with: .timeout)
        let client = try await HTTP2TestClient(try ServiceFixture(upstream: source), router: HeldRouter())
        try await client.start()
        try await client.request(1, "/d?host=\(Self.host)")
        let response = try await client.response(1)
        #expect(response.status == "503")
        #expect(response.headers.first(name: "retry-after") != nil)
        #expect(response.text.contains(#""code":"UpstreamUnavailable""#), "\(response.text)")
    }

    @Test func aResetStreamsLookUpIsLetGoAtOnceWithItsSlot() async throws {
        let source = Self.heldSource()
        let budget = RequestBudget(streams: 5)
        let client = try await HTTP2TestClient(try ServiceFixture(upstream: source), router: HeldRouter(), bodyBudget: budget) {
            $0.maxConcurrentStreams = 1
        }
        try await client.start()
        try await client.request(1, "/d?host=\(Self.host)")
        try await source.waitForQueries(Self.host)
        #expect(budget.streamsOpen == 1)
        var cancel = ByteBuffer()
        cancel.writeInteger(HTTP2ErrorCode.cancel.rawValue)
        try await client.send(HTTP2TestClient.frame(.rstStream, stream: 1, payload: cancel))
        #expect(client.connection.occupiedStreams == 0, "the lookup is cancelled, not waited for")
        #expect(client.connection.routerTasksRunning == 0)
        #expect(budget.streamsOpen == 0)

        // The next request for the name joins the query still in flight, and is answered when it is.
        try await client.request(3, "/d?host=\(Self.host)")
        #expect(try await client.drain().isEmpty, "stream 3 is taken, not refused")
        source.release(Self.host)
        #expect(try await client.response(3).status == "200")
        #expect(source.queryCount(Self.host) == 1)
        try await Self.settled(client)
        #expect(budget.streamsOpen == 0)
    }

    @Test func aLookUpPastTheIdleTimeoutIsResetAndLetGo() async throws {
        let source = Self.heldSource()
        let budget = RequestBudget(streams: 5)
        let client = try await HTTP2TestClient(try ServiceFixture(upstream: source), router: HeldRouter(), bodyBudget: budget) {
            $0.idleTimeout = .seconds(60)
        }
        try await client.start()
        try await client.request(1, "/d?host=\(Self.host)")
        try await source.waitForQueries(Self.host)
        await client.channel.testingEventLoop.advanceTime(by: .seconds(61))
        let frames = try await client.drain()
        #expect(frames.first { $0.streamID == 1 }?.errorCode == .cancel, "\(frames)")
        #expect(budget.streamsOpen == 0)
        #expect(client.connection.routerTasksRunning == 0)
        source.release(Self.host)
    }

    @Test func aReplyLargerThanTheClientsWindowWaitsForItAndThenLetsItsSlotGo() async throws {
        let source = Self.heldSource()
        let budget = RequestBudget(streams: 5)
        let client = try await HTTP2TestClient(try ServiceFixture(upstream: source), router: HeldRouter(), bodyBudget: budget)
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 10)])
        try await client.request(1, "/d?host=\(Self.host)")
        try await source.waitForQueries(Self.host)
        source.release(Self.host)
        try await Self.settled(client)
        let first = try await client.drain()
        #expect(first.map(\.type) == [.headers, .data])
        #expect(first.last?.payload.readableBytes == 10 && first.last?.flags.contains(.endStream) == false)
        #expect(budget.streamsOpen == 1, "the stream waiting for credit holds its slot")

        try await Self.grant(client, stream: 1)
        let rest = try await client.drain()
        #expect(rest.map(\.type) == [.data] && rest.first?.flags.contains(.endStream) == true)
        #expect(String(buffer: first[1].payload) + String(buffer: rest[0].payload) == #"{"host":"held.example.test","ips":["192.0.2.20"],"ttl":60,"origin_ttl":60}"#)
        #expect(budget.streamsOpen == 0)
        #expect(client.connection.occupiedStreams == 0)
    }

    /// A `CacheMiss` may complete on the loop before `start` returns (the service's own never do): the stream is
    /// answered, and its slot let go once the reply has gone out.
    @Test func aLookUpCompletedBeforeItsStartReturnsIsAnsweredAndLetGo() async throws {
        struct Inline: CacheHitAnswering {
            let requestMetrics = RequestMetrics()
            func reply(toGET target: String, channel: any Channel) -> (Reply, route: String)? { nil }
            func answer(toGET target: String, channel: any Channel, sendableAtOnce: Int) -> GETAnswer {
                .lookUp(
                    CacheMiss(route: "/d") { _, completion in
                        completion(Reply(contentType: "application/json", cacheControl: .noStore, body: ByteBuffer(string: String(repeating: "x", count: 100))))
                        return .none
                    }
                )
            }
        }
        let budget = RequestBudget(streams: 5)
        let client = try await HTTP2TestClient(try ServiceFixture(), router: HeldRouter(), cacheHits: Inline(), bodyBudget: budget)
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 10)])
        try await client.request(1, "/d?host=\(Self.host)")
        #expect(try await client.drain().map(\.type) == [.headers, .data])
        try await Self.grant(client, stream: 1)
        #expect(try await client.drain().last?.flags.contains(.endStream) == true)
        #expect(budget.streamsOpen == 0)
        #expect(client.connection.routerWorkWithoutStream.isEmpty && client.connection.routerTasksRunning == 0)
    }

    @Test func aDrainWaitsForALookUp() async throws {
        let source = Self.heldSource()
        let client = try await HTTP2TestClient(try ServiceFixture(upstream: source), router: HeldRouter())
        try await client.start()
        try await client.request(1, "/d?host=\(Self.host)")
        try await source.waitForQueries(Self.host)
        client.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        let announced = try await client.next()
        #expect(announced.type == .goAway)
        let ping = try await client.next()
        try await client.send(HTTP2TestClient.frame(.ping, flags: .ack, stream: 0, payload: ping.payload))
        let final = try await client.next()
        #expect(final.type == .goAway && final.payload.getInteger(at: final.payload.readerIndex, as: UInt32.self) == 1)
        #expect(client.channel.isActive, "open while the lookup runs")
        source.release(Self.host)
        #expect(try await client.response(1).status == "200")
        try await client.waitForClose()
    }

    @Test func aConnectionClosedDuringALookUpLetsItGo() async throws {
        let source = Self.heldSource()
        let budget = RequestBudget(streams: 5)
        let client = try await HTTP2TestClient(try ServiceFixture(upstream: source), router: HeldRouter(), bodyBudget: budget)
        try await client.start()
        try await client.request(1, "/d?host=\(Self.host)")
        try await source.waitForQueries(Self.host)
        nonisolated(unsafe) let connection = client.connection
        let settled = try await client.channel.eventLoop.submit { connection.closedAndSettled() }.get()
        try await client.channel.close()
        try await withTimeout { try await settled.get() }
        #expect(budget.streamsOpen == 0, "let go without waiting for the upstream")
        source.release(Self.host)
    }

    @Test func aMissIsAdmittedBeforeItIsLookedUp() async throws {
        let source = ScriptedSource()
        source.script(Self.host, ipv4: ["192.0.2.20"], ttl: 60)
        let fixture = try ServiceFixture(upstream: source) {
            $0.rateLimitPerSecond = 0.5
            $0.rateLimitBurst = 1
        }
        let client = try await HTTP2TestClient(fixture, router: HeldRouter())
        try await client.start()
        try await client.request(1, "/d?host=\(Self.host)")
        #expect(try await client.response(1).status == "200")
        try await client.request(3, "/d?host=other.example.test")
        let limited = try await client.response(3)
        #expect(limited.status == "429")
        #expect(limited.headers.first(name: "retry-after") == "2")
        #expect(source.queryCount("other.example.test") == 0, "a refused request asks nothing upstream")
    }

    /// The connection takes a stream for a miss before the client's rate is spent on it, as for the router's requests:
    /// a miss refused because the service holds all the streams it will (REFUSED_STREAM, to be sent again) costs its
    /// client no token.
    @Test func aMissRefusedForTheStreamBudgetSpendsNoneOfTheClientsRate() async throws {
        let source = Self.heldSource()
        source.script("second.example.test", ipv4: ["192.0.2.21"], ttl: 60)
        source.script("third.example.test", ipv4: ["192.0.2.22"], ttl: 60)
        let budget = RequestBudget(streams: 1)
        // Two tokens, and (at 0.01 a second) no third while the test runs.
        let fixture = try ServiceFixture(upstream: source) {
            $0.rateLimitPerSecond = 0.01
            $0.rateLimitBurst = 2
        }
        let client = try await HTTP2TestClient(fixture, router: HeldRouter(), bodyBudget: budget)
        try await client.start()
        try await client.request(1, "/d?host=\(Self.host)")
        try await source.waitForQueries(Self.host)
        try await client.request(3, "/d?host=second.example.test")
        let refused = try await client.drain()
        #expect(refused.map(\.streamID) == [3] && refused.first?.errorCode == .refusedStream, "\(refused)")
        #expect(source.queryCount("second.example.test") == 0)
        source.release(Self.host)
        #expect(try await client.response(1).status == "200")
        try await Self.settled(client)
        try await client.request(5, "/d?host=third.example.test")
        #expect(try await client.response(5).status == "200", "the second token was not spent on the refused stream")
        try await client.request(7, "/d?host=second.example.test")
        #expect(try await client.response(7).status == "429", "two tokens in all")
    }

    /// A cache hit whose reply is larger than the client's window needs a stream of its own to wait for credit: the
    /// connection takes it before the client's rate is spent, so a hit refused for the stream budget costs no token.
    @Test func aHitLargerThanTheWindowRefusedForTheStreamBudgetSpendsNoneOfTheClientsRate() async throws {
        let source = ScriptedSource()
        source.script(Self.host, ipv4: ["192.0.2.20"], ttl: 60)
        let budget = RequestBudget(streams: 1)
        // Two tokens, and (at 0.01 a second) no third while the test runs.
        let fixture = try ServiceFixture(upstream: source) {
            $0.rateLimitPerSecond = 0.01
            $0.rateLimitBurst = 2
        }
        let client = try await HTTP2TestClient(fixture, router: HeldRouter(), bodyBudget: budget)
        // Ten bytes of credit per stream: no reply fits, each waits for WINDOW_UPDATE on its stream.
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 10)])
        // A miss that fills the cache (the first token), its reply waiting for credit on the service's one stream.
        try await client.request(1, "/d?host=\(Self.host)")
        try await Self.settled(client)
        #expect(try await client.drain().map(\.type) == [.headers, .data])
        #expect(budget.streamsOpen == 1)

        // A hit that must wait for credit too, with no stream left for it: refused, before anything is written.
        try await client.request(3, "/d?host=\(Self.host)")
        let refused = try await client.drain()
        #expect(refused.map(\.streamID) == [3] && refused.first?.errorCode == .refusedStream, "\(refused)")

        try await Self.grant(client, stream: 1)
        #expect(try await client.drain().contains { $0.streamID == 1 && $0.flags.contains(.endStream) })
        #expect(budget.streamsOpen == 0)
        try await client.request(5, "/d?host=\(Self.host)")
        try await Self.grant(client, stream: 5)
        #expect(try await client.response(5).status == "200", "the second token was not spent on the refused hit")
        try await client.request(7, "/d?host=\(Self.host)")
        try await Self.grant(client, stream: 7)
        #expect(try await client.response(7).status == "429", "two tokens in all")
    }

    /// A thousand bytes more of credit for `stream`.
    private static func grant(_ client: HTTP2TestClient, stream: UInt32) async throws {
        var increment = ByteBuffer()
        increment.writeInteger(UInt32(1000))
        try await client.send(HTTP2TestClient.frame(.windowUpdate, stream: stream, payload: increment))
    }
}
