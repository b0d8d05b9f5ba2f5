import HTTPDNSCore
import HTTPDNSWire
import NIOCore
import NIOHPACK
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// The service's own HTTP/2 connection (``HTTP2ServerConnection``), frame by frame: requests answered on the event
/// loop and through the router, flow control, the connection's life, and every way a client can break the
/// protocol (RFC 9113), each answered with the error the RFC names.
@Suite struct HTTP2ServerConnectionTests {
    static let hitPath = "/d?host=api.example.test"
    static let hitBody = #"{"host":"api.example.test","ips":["192.0.2.10"],"ttl":60,"origin_ttl":60}"#

    private func primed(_ configure: (inout HTTPDNSServerConfiguration) -> Void = { _ in }) async throws -> ServiceFixture {
        let fixture = try ServiceFixture(NativeAPITests.dual, configure)
        try await fixture.prime("api.example.test")
        return fixture
    }

    // MARK: Requests

    @Test func aHitIsAnsweredAsItsHeadersAreRead() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        try await client.request(1, Self.hitPath)
        let frames = try await client.drain()
        #expect(frames.map(\.type) == [.headers, .data], "answered within the same read, without the router")
        let headers = try #require(frames.first?.headers)
        #expect(headers.first(name: ":status") == "200")
        #expect(headers.first(name: "content-type") == "application/json")
        #expect(headers.first(name: "cache-control") == "max-age=60")
        #expect(headers.first(name: "content-length") == String(Self.hitBody.utf8.count))
        #expect(headers.first(name: "date")?.hasSuffix(" GMT") == true)
        #expect(frames[1].flags.contains(.endStream))
        #expect(String(buffer: frames[1].payload) == Self.hitBody)
        #expect(fixture.source.queryCount("api.example.test") == 1, "only the priming lookup reached the source")
    }

    @Test func aMissIsLookedUpAndTheNextRequestIsAHit() async throws {
        let fixture = try ServiceFixture(NativeAPITests.dual)
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        try await client.request(1, "/d?host=v4.example.test")
        let miss = try await client.response(1)
        #expect(miss.status == "200")
        #expect(miss.text.contains(#""ips":["192.0.2.11","192.0.2.12"]"#))
        #expect(miss.headers.first(name: "date") != nil)
        #expect(miss.reset == nil)

        try await client.request(3, "/d?host=v4.example.test")
        let hit = try await client.drain()
        #expect(hit.map(\.type) == [.headers, .data])
        #expect(String(buffer: hit[1].payload) == miss.text)
        #expect(fixture.source.queryCount("v4.example.test") == 1)
    }

    @Test func everyOtherRouteIsTheRouters() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        let cases: [(String, String, String)] = [
            ("GET", "/healthz", "200"),
            ("GET", "/nowhere", "404"),
            ("POST", "/d?host=api.example.test", "405"),
            ("GET", "/d?host=-bad-", "400"),
            ("GET", "/resolve?host=api.example.test", "200"),
        ]
        var stream: UInt32 = 1
        for (method, path, status) in cases {
            try await client.request(stream, path, method: method)
            let response = try await client.response(stream)
            #expect(response.status == status, "\(method) \(path)")
            stream += 2
        }
    }

    @Test func aPOSTBodyInDataFramesReachesTheRoute() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        let query = DoHAPITests.query("api.example.test", type: 1)
        try await client.request(1, "/dns-query", method: "POST", extra: [("content-type", "application/dns-message")], endStream: false)
        try await client.send(HTTP2TestClient.frame(.data, stream: 1, payload: ByteBuffer(bytes: query.prefix(5))))
        try await client.send(HTTP2TestClient.frame(.data, flags: .endStream, stream: 1, payload: ByteBuffer(bytes: query.dropFirst(5))))
        let response = try await client.response(1)
        #expect(response.status == "200")
        #expect(response.headers.first(name: "content-type") == "application/dns-message")
        let answer = try DNSMessage(parsingQuery: Array(buffer: response.body))
        #expect(answer.isResponse && answer.questions.first?.name == "api.example.test")
    }

    @Test func trailersEndARequest() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        try await client.request(1, "/dns-query", method: "POST", extra: [("content-type", "application/dns-message")], endStream: false)
        try await client.send(HTTP2TestClient.frame(.data, stream: 1, payload: ByteBuffer(bytes: DoHAPITests.query("api.example.test", type: 1))))
        try await client.send(
            HTTP2TestClient.frame(.headers, flags: [.endHeaders, .endStream], stream: 1, payload: try client.headerBlock([("x-done", "1")]))
        )
        #expect(try await client.response(1).status == "200")
    }

    @Test func aBodyPastTheLimitIsRefusedAtOnceAndTheStreamReset() async throws {
        let fixture = try await primed { $0.maxDNSMessageBytes = 16 }
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        try await client.request(1, "/dns-query", method: "POST", extra: [("content-type", "application/dns-message")], endStream: false)
        try await client.data(1, String(repeating: "x", count: 17), endStream: false)
        let response = try await client.response(1)
        #expect(response.status == "413")
        #expect(response.reset == .noError, "RST_STREAM(NO_ERROR) after a complete answer to an unfinished request")
        // What the client had in flight is ignored, not answered with STREAM_CLOSED.
        try await client.data(1, "more")
        #expect(try await client.drain().filter { $0.type == .rstStream }.isEmpty)
    }

    @Test func aHEADResponseHasNoBody() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        try await client.request(1, "/healthz", method: "HEAD")
        let response = try await client.response(1)
        #expect(response.body.readableBytes == 0)
        #expect(response.status != nil)
    }

    @Test func hitsTakeTokensFromTheRateLimitersBuckets() async throws {
        let fixture = try await primed {
            $0.rateLimitPerSecond = 0.5
            $0.rateLimitBurst = 2
        }
        // (Their metrics are recorded as for HTTP/1.1: CacheHitPathTests.)
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        for stream: UInt32 in [1, 3] {
            try await client.request(stream, Self.hitPath)
            #expect(try await client.response(stream).status == "200")
        }
        try await client.request(5, Self.hitPath)
        let limited = try await client.response(5)
        #expect(limited.status == "429")
        #expect(limited.headers.first(name: "retry-after") == "2")
        #expect(limited.headers.first(name: "cache-control") == "no-store")
        #expect(limited.text.contains(#""code":"RateLimited""#))
    }

    @Test func aHeaderBlockMaySpanContinuationFrames() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        var block = try client.headerBlock(HTTP2TestClient.requestFields(Self.hitPath))
        let first = block.readSlice(length: 5)!
        let second = block.readSlice(length: 5)!
        try await client.send(HTTP2TestClient.frame(.headers, flags: .endStream, stream: 1, payload: first))
        try await client.send(HTTP2TestClient.frame(.continuation, stream: 1, payload: second))
        try await client.send(HTTP2TestClient.frame(.continuation, flags: .endHeaders, stream: 1, payload: block))
        #expect(try await client.response(1).text == Self.hitBody)
    }

    /// Padding is removed, after the priority fields when the frame has them (RFC 9113 §6.2: the pad length, the
    /// priority fields, the block, then the padding).
    @Test(arguments: [false, true])
    func paddingIsRemoved(withPriorityFields: Bool) async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        var payload = ByteBuffer()
        payload.writeInteger(UInt8(3))
        if withPriorityFields { payload.writeMultipleIntegers(UInt32(0), UInt8(15)) }
        payload.writeImmutableBuffer(try client.headerBlock(HTTP2TestClient.requestFields(Self.hitPath)))
        payload.writeRepeatingByte(0, count: 3)
        let flags: HTTP2FrameFlags = withPriorityFields ? [.endHeaders, .endStream, .padded, .priority] : [.endHeaders, .endStream, .padded]
        try await client.send(HTTP2TestClient.frame(.headers, flags: flags, stream: 1, payload: payload))
        #expect(try await client.response(1).text == Self.hitBody)
    }

    // MARK: Flow control

    @Test func aBodyWaitsForTheClientsWindow() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 10)])
        try await client.request(1, Self.hitPath)
        let first = try await client.drain()
        #expect(first.map(\.type) == [.headers, .data])
        #expect(first[1].payload.readableBytes == 10)
        #expect(!first[1].flags.contains(.endStream))

        var increment = ByteBuffer()
        increment.writeInteger(UInt32(1000))
        try await client.send(HTTP2TestClient.frame(.windowUpdate, stream: 1, payload: increment))
        let rest = try await client.drain()
        #expect(rest.map(\.type) == [.data])
        #expect(rest.first?.flags.contains(.endStream) == true)
        #expect(String(buffer: first[1].payload) + String(buffer: rest[0].payload) == Self.hitBody)
    }

    @Test func aLargerWindowInSettingsReleasesWaitingData() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 0)])
        try await client.request(1, Self.hitPath)
        #expect(try await client.drain().map(\.type) == [.headers])
        try await client.send(HTTP2TestClient.settings([(HTTP2Setting.initialWindowSize, 65_535)]))
        let frames = try await client.drain()
        #expect(frames.map(\.type) == [.settings, .data])
        #expect(frames.last?.flags.contains(.endStream) == true)
    }

    @Test func theConnectionWindowIsSharedByStreams() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        // Streams may take a megabyte each; the connection, 65,535 bytes until the client says more.
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 1 << 20)])
        let count = 950
        var requests = ByteBuffer()
        for index in 0..<count {
            let block = try client.headerBlock(HTTP2TestClient.requestFields(Self.hitPath))
            requests.writeImmutableBuffer(
                HTTP2TestClient.frame(.headers, flags: [.endHeaders, .endStream], stream: UInt32(2 * index + 1), payload: block)
            )
        }
        try await client.send(requests)
        let before = try await client.drain()
        let sent = before.filter { $0.type == .data }.reduce(0) { $0 + $1.payload.readableBytes }
        #expect(sent == 65_535, "the connection's window, and not a byte more")
        #expect(before.filter { $0.type == .headers }.count == count)

        var increment = ByteBuffer()
        increment.writeInteger(UInt32(1 << 20))
        try await client.send(HTTP2TestClient.frame(.windowUpdate, stream: 0, payload: increment))
        let after = try await client.drain()
        let ended = (before + after).filter { $0.type == .data && $0.flags.contains(.endStream) }
        #expect(Set(ended.map(\.streamID)).count == count, "every stream ends once the window opens")
        #expect(sent + after.reduce(0) { $0 + $1.payload.readableBytes } == count * Self.hitBody.utf8.count)
    }

    @Test func dataPastTheStreamsWindowIsAFlowControlError() async throws {
        let fixture = try await primed { $0.maxDNSMessageBytes = 20_000 }
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        // One read: past 20,000 bytes the router has the request and the window is no longer topped up; the fifth
        // frame overruns the 65,535 bytes the stream started with, before the router can answer.
        var bytes = ByteBuffer()
        let block = try client.headerBlock(
            HTTP2TestClient.requestFields("/dns-query", method: "POST", extra: [("content-type", "application/dns-message")])
        )
        bytes.writeImmutableBuffer(HTTP2TestClient.frame(.headers, flags: .endHeaders, stream: 1, payload: block))
        for _ in 0..<5 {
            bytes.writeImmutableBuffer(HTTP2TestClient.frame(.data, stream: 1, payload: ByteBuffer(repeating: 0, count: 16_000)))
        }
        try await client.send(bytes)
        let frames = try await client.drain()
        #expect(frames.filter { $0.streamID == 1 }.map(\.errorCode) == [.flowControlError], "\(frames)")
        #expect(client.channel.isActive)
    }

    @Test func windowOverflowIsAFlowControlError() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        var increment = ByteBuffer()
        increment.writeInteger(UInt32(Int32.max))
        try await client.send(HTTP2TestClient.frame(.windowUpdate, stream: 0, payload: increment))
        let goAway = try await client.next()
        #expect(goAway.type == .goAway && goAway.errorCode == .flowControlError)
        try await client.waitForClose()
    }

    // MARK: The connection's life

    @Test func settingsEnableConnectProtocolOfOneIsTakenAndMayBeRepeated() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start(settings: [(HTTP2Setting.enableConnectProtocol, 1)])
        try await client.send(HTTP2TestClient.settings([(HTTP2Setting.enableConnectProtocol, 1)]))
        try await client.request(1, Self.hitPath)
        #expect(try await client.response(1).status == "200")
    }

    @Test func pingIsAnswered() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.start()
        try await client.send(HTTP2TestClient.frame(.ping, stream: 0, payload: ByteBuffer(bytes: [1, 2, 3, 4, 5, 6, 7, 8])))
        let pong = try await client.next()
        #expect(pong.type == .ping && pong.flags.contains(.ack))
        #expect(Array(buffer: pong.payload) == [1, 2, 3, 4, 5, 6, 7, 8])
    }

    @Test func unknownFrameTypesAreIgnored() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        try await client.send(HTTP2TestClient.frame(HTTP2FrameType(rawValue: 0xFA), stream: 1, payload: ByteBuffer(string: "?")))
        try await client.request(1, Self.hitPath)
        #expect(try await client.response(1).status == "200")
    }

    @Test func anIdleConnectionGoesAwayAfterTheIdleTimeout() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.idleTimeout = .seconds(60) }
        try await client.start()
        await client.channel.testingEventLoop.advanceTime(by: .seconds(59))
        #expect(client.channel.isActive)
        await client.channel.testingEventLoop.advanceTime(by: .seconds(2))
        let goAway = try await client.next()
        #expect(goAway.type == .goAway && goAway.errorCode == .noError)
        try await client.waitForClose()
    }

    @Test func aRequestRestartsTheIdleClock() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture) { $0.idleTimeout = .seconds(60) }
        try await client.start()
        await client.channel.testingEventLoop.advanceTime(by: .seconds(50))
        try await client.request(1, Self.hitPath)
        _ = try await client.response(1)
        await client.channel.testingEventLoop.advanceTime(by: .seconds(50))
        #expect(client.channel.isActive, "50 s since the last request")
        await client.channel.testingEventLoop.advanceTime(by: .seconds(11))
        #expect(try await client.next().type == .goAway)
    }

    @Test func aStreamThatNeverEndsIsResetAtTheDeadline() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.idleTimeout = .seconds(60) }
        try await client.start()
        try await client.request(1, "/dns-query", method: "POST", endStream: false)
        await client.channel.testingEventLoop.advanceTime(by: .seconds(61))
        let frames = try await client.drain()
        #expect(frames.first { $0.streamID == 1 }?.errorCode == .cancel)
        #expect(client.channel.isActive, "the stream is reset, the connection stays")
    }

    @Test func gracefulShutdownTakesWhatIsInFlightThenRefusesAndClosesAfterTheLastStream() async throws {
        let fixture = try ServiceFixture(NativeAPITests.dual)
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        let post = [("content-type", "application/dns-message")]
        try await client.request(1, "/dns-query", method: "POST", extra: post, endStream: false)
        client.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        // First GOAWAY names the largest stream ID, with a PING behind it (RFC 9113 §6.8).
        let announced = try await client.next()
        #expect(announced.type == .goAway && announced.errorCode == .noError)
        #expect(announced.payload.getInteger(at: announced.payload.readerIndex, as: UInt32.self) == 0x7FFF_FFFF)
        let ping = try await client.next()
        #expect(ping.type == .ping && !ping.flags.contains(.ack))

        // A request sent before the client saw the GOAWAY is still taken.
        try await client.request(3, "/dns-query", method: "POST", extra: post, endStream: false)
        try await client.send(HTTP2TestClient.frame(.ping, flags: .ack, stream: 0, payload: ping.payload))
        let final = try await client.next()
        #expect(final.type == .goAway && final.errorCode == .noError)
        #expect(final.payload.getInteger(at: final.payload.readerIndex, as: UInt32.self) == 3, "streams 1 and 3 will be answered")

        try await client.request(5, "/healthz")
        #expect(try await client.next().errorCode == .refusedStream, "a stream opened after the last GOAWAY is refused")
        #expect(client.channel.isActive)

        let query = ByteBuffer(bytes: DoHAPITests.query("api.example.test", type: 1))
        for stream: UInt32 in [1, 3] {
            try await client.send(HTTP2TestClient.frame(.data, flags: .endStream, stream: stream, payload: query))
            #expect(try await client.response(stream).status == "200")
        }
        try await client.waitForClose()
    }

    @Test func aDrainingConnectionClosesAtTheIdleTimeoutEvenIfTheClientNeverAnswers() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.idleTimeout = .seconds(60) }
        try await client.start()
        try await client.request(1, "/dns-query", method: "POST", endStream: false)
        client.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(try await client.drain().map(\.type) == [.goAway, .ping])
        await client.channel.testingEventLoop.advanceTime(by: .seconds(61))
        // The PING never came back; the last GOAWAY still names what was taken.
        let frames = try await client.drain()
        let final = try #require(frames.last { $0.type == .goAway })
        #expect(final.payload.getInteger(at: final.payload.readerIndex, as: UInt32.self) == 1)
        try await client.waitForClose()
    }

    @Test func goAwayFromTheClientClosesOnceItsStreamsAreAnswered() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.start()
        var payload = ByteBuffer()
        payload.writeMultipleIntegers(UInt32(0), UInt32(0))
        try await client.send(HTTP2TestClient.frame(.goAway, stream: 0, payload: payload))
        #expect(try await client.next().type == .goAway)
        try await client.waitForClose()
    }

    @Test func streamsPastTheConcurrencyLimitAreRefused() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.maxConcurrentStreams = 2 }
        try await client.start()
        for stream: UInt32 in [1, 3, 5] {
            try await client.request(stream, "/dns-query", method: "POST", endStream: false)
        }
        let frames = try await client.drain()
        #expect(frames.count == 1)
        #expect(frames.first?.streamID == 5 && frames.first?.errorCode == .refusedStream)
    }

    @Test func clientResetsCancelTheStreamAndTooManyEndTheConnection() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.maxGlitches = 3 }
        try await client.start()
        var cancel = ByteBuffer()
        cancel.writeInteger(HTTP2ErrorCode.cancel.rawValue)
        for stream: UInt32 in stride(from: 1, through: 7, by: 2) {
            try await client.request(stream, "/dns-query", method: "POST", endStream: false)
            try await client.send(HTTP2TestClient.frame(.rstStream, stream: stream, payload: cancel))
        }
        let frames = try await client.drain()
        #expect(frames.count == 1)
        #expect(frames.first?.type == .goAway && frames.first?.errorCode == .enhanceYourCalm)
        try await client.waitForClose()
    }

    // MARK: Malformed requests: a stream error, the connection goes on

    @Test(arguments: [
        ("uppercase name", HTTP2TestClient.requestFields(hitPath, extra: [("X-Upper", "1")])),
        ("no :path", [(":method", "GET"), (":scheme", "https")]),
        ("pseudo-header after a regular field", [(":method", "GET"), ("accept", "*/*"), (":scheme", "https"), (":path", hitPath)]),
        ("duplicate :method", [(":method", "GET"), (":method", "GET"), (":scheme", "https"), (":path", hitPath)]),
        ("response pseudo-header", HTTP2TestClient.requestFields(hitPath) + [(":status", "200")]),
        ("connection-specific field", HTTP2TestClient.requestFields(hitPath, extra: [("connection", "keep-alive")])),
        ("te other than trailers", HTTP2TestClient.requestFields(hitPath, extra: [("te", "gzip")])),
        ("line break in a value", HTTP2TestClient.requestFields(hitPath, extra: [("x-a", "1\r\nx-b: 2")])),
        ("content-length on a request without a body", HTTP2TestClient.requestFields(hitPath, extra: [("content-length", "3")])),
        // Found by the differential fuzz target: a pseudo-header field's value is part of the target URI or the method.
        ("a space inside :path", [(":method", "GET"), (":scheme", "https"), (":path", "/d?host=a b.test")]),
        ("a tab inside :authority", [(":method", "GET"), (":scheme", "https"), (":authority", "a\tb"), (":path", hitPath)]),
        ("DEL inside :path", [(":method", "GET"), (":scheme", "https"), (":path", "/d?host=a\u{7F}.test")]),
    ])
    func malformedRequestsAreResetWithProtocolError(_ name: String, _ fields: [(String, String)]) async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        try await client.send(HTTP2TestClient.frame(.headers, flags: [.endHeaders, .endStream], stream: 1, payload: try client.headerBlock(fields)))
        let reset = try await client.next()
        #expect(reset.type == .rstStream && reset.streamID == 1 && reset.errorCode == .protocolError, "\(name)")
        try await client.request(3, Self.hitPath)
        #expect(try await client.response(3).status == "200", "the connection goes on after \(name)")
    }

    @Test func aBodyThatDisagreesWithContentLengthIsMalformed() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.start()
        try await client.request(1, "/dns-query", method: "POST", extra: [("content-length", "10")], endStream: false)
        try await client.data(1, "short")
        #expect(try await client.next().errorCode == .protocolError)
    }

    // MARK: Broken protocol: GOAWAY and close

    @Test(arguments: [
        (
            "a frame larger than SETTINGS_MAX_FRAME_SIZE", HTTP2TestClient.frame(.data, stream: 1, payload: ByteBuffer(repeating: 0, count: 16_385)),
            HTTP2ErrorCode.frameSizeError
        ),
        (
            "HEADERS on an even stream", HTTP2TestClient.frame(.headers, flags: .endHeaders, stream: 2, payload: ByteBuffer(bytes: [0x82])),
            .protocolError
        ),
        ("DATA on stream 0", HTTP2TestClient.frame(.data, stream: 0), .protocolError),
        ("DATA on an idle stream", HTTP2TestClient.frame(.data, stream: 9), .protocolError),
        ("CONTINUATION without HEADERS", HTTP2TestClient.frame(.continuation, flags: .endHeaders, stream: 1), .protocolError),
        (
            "PUSH_PROMISE from a client",
            HTTP2TestClient.frame(.pushPromise, flags: .endHeaders, stream: 1, payload: ByteBuffer(bytes: [0, 0, 0, 2])), .protocolError
        ),
        (
            "a header block that does not decode",
            HTTP2TestClient.frame(
                .headers,
                flags: [.endHeaders, .endStream],
                stream: 1,
                payload: ByteBuffer(bytes: [0xFF, 0xFF, 0xFF, 0xFF, 0x7F])
            ), .compressionError
        ),
        (
            "SETTINGS not a multiple of six bytes", HTTP2TestClient.frame(.settings, stream: 0, payload: ByteBuffer(bytes: [0, 4, 0])),
            .frameSizeError
        ),
        ("SETTINGS_MAX_FRAME_SIZE too small", HTTP2TestClient.settings([(HTTP2Setting.maxFrameSize, 100)]), .protocolError),
        ("SETTINGS_INITIAL_WINDOW_SIZE too large", HTTP2TestClient.settings([(HTTP2Setting.initialWindowSize, 1 << 31)]), .flowControlError),
        ("SETTINGS_ENABLE_PUSH of 2", HTTP2TestClient.settings([(HTTP2Setting.enablePush, 2)]), .protocolError),
        (
            "SETTINGS_ENABLE_CONNECT_PROTOCOL of 2", HTTP2TestClient.settings([(HTTP2Setting.enableConnectProtocol, 2)]),
            .protocolError
        ),
        (
            "SETTINGS_ENABLE_CONNECT_PROTOCOL taken back from 1 to 0",
            HTTP2TestClient.settings([(HTTP2Setting.enableConnectProtocol, 1), (HTTP2Setting.enableConnectProtocol, 0)]), .protocolError
        ),
        ("PING of 7 bytes", HTTP2TestClient.frame(.ping, stream: 0, payload: ByteBuffer(repeating: 0, count: 7)), .frameSizeError),
        (
            "WINDOW_UPDATE of 0 on the connection", HTTP2TestClient.frame(.windowUpdate, stream: 0, payload: ByteBuffer(bytes: [0, 0, 0, 0])),
            .protocolError
        ),
        ("RST_STREAM on an idle stream", HTTP2TestClient.frame(.rstStream, stream: 11, payload: ByteBuffer(bytes: [0, 0, 0, 8])), .protocolError),
        ("RST_STREAM on a server stream ID", HTTP2TestClient.frame(.rstStream, stream: 2, payload: ByteBuffer(bytes: [0, 0, 0, 8])), .protocolError),
        (
            "WINDOW_UPDATE on an idle stream", HTTP2TestClient.frame(.windowUpdate, stream: 7, payload: ByteBuffer(bytes: [0, 0, 0, 1])),
            .protocolError
        ),
        (
            "PRIORITY of an idle stream on itself", HTTP2TestClient.frame(.priority, stream: 7, payload: ByteBuffer(bytes: [0, 0, 0, 7, 16])),
            .protocolError
        ),
        (
            "PRIORITY of 4 bytes on an idle stream", HTTP2TestClient.frame(.priority, stream: 7, payload: ByteBuffer(bytes: [0, 0, 0, 0])),
            .frameSizeError
        ),
        (
            // Pad length 3, the priority fields, then a block of 2 bytes: the padding fits the frame but not the block.
            "HEADERS whose padding is longer than the block after its priority fields",
            HTTP2TestClient.frame(
                .headers,
                flags: [.endHeaders, .padded, .priority],
                stream: 1,
                payload: ByteBuffer(bytes: [3, 0, 0, 0, 0, 16, 0x82, 0x84])
            ), .protocolError
        ),
        (
            "HEADERS too short for its pad length and priority fields",
            HTTP2TestClient.frame(.headers, flags: [.endHeaders, .padded, .priority], stream: 1, payload: ByteBuffer(bytes: [0, 0, 0, 0, 0])),
            .frameSizeError
        ),
        (
            // The pad length (5) is longer than the rest of the frame, but the frame is too short to get that far.
            "HEADERS too short for its pad length and priority fields, padded past its end",
            HTTP2TestClient.frame(.headers, flags: [.endHeaders, .padded, .priority], stream: 1, payload: ByteBuffer(bytes: [5, 0, 0, 0, 0])),
            .frameSizeError
        ),
        (
            "two padded DATA frames without data in a row",
            HTTP2TestClient.frame(.headers, flags: .endHeaders, stream: 1, payload: ByteBuffer(bytes: [0x83, 0x87, 0x84]))
                + HTTP2TestClient.frame(.data, flags: .padded, stream: 1, payload: ByteBuffer(bytes: [0]))
                + HTTP2TestClient.frame(.data, flags: .padded, stream: 1, payload: ByteBuffer(bytes: [0])),
            .enhanceYourCalm
        ),
        (
            "two empty DATA frames in a row",
            // POST / over https (static table entries 3, 7 and 4), then nothing, twice.
            HTTP2TestClient.frame(.headers, flags: .endHeaders, stream: 1, payload: ByteBuffer(bytes: [0x83, 0x87, 0x84]))
                + HTTP2TestClient.frame(.data, stream: 1) + HTTP2TestClient.frame(.data, stream: 1),
            .enhanceYourCalm
        ),
    ])
    func protocolViolationsEndTheConnection(_ name: String, _ frame: ByteBuffer, _ code: HTTP2ErrorCode) async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.start()
        try await client.send(frame)
        let goAway = try await client.next()
        #expect(goAway.type == .goAway && goAway.errorCode == code, "\(name): \(goAway)")
        try await client.waitForClose()
    }

    @Test func anErrorStillSendsWhatTheSameReadAnswered() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        var bytes = HTTP2TestClient.frame(
            .headers,
            flags: [.endHeaders, .endStream],
            stream: 1,
            payload: try client.headerBlock(HTTP2TestClient.requestFields(Self.hitPath))
        )
        bytes.writeImmutableBuffer(HTTP2TestClient.frame(.pushPromise, stream: 1, payload: ByteBuffer(bytes: [0, 0, 0, 2])))
        // Nothing after the error is read.
        bytes.writeImmutableBuffer(
            HTTP2TestClient.frame(
                .headers,
                flags: [.endHeaders, .endStream],
                stream: 3,
                payload: try client.headerBlock(HTTP2TestClient.requestFields(Self.hitPath))
            )
        )
        try await client.send(bytes)
        let frames = try await client.drain()
        #expect(frames.map(\.type) == [.headers, .data, .goAway])
        #expect(frames.last?.errorCode == .protocolError)
        #expect(frames.last?.payload.getInteger(at: frames.last!.payload.readerIndex, as: UInt32.self) == 1, "stream 1 was processed")
    }

    @Test func controlFrameFloodsEndTheConnection() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.maxControlFrames = 3 }
        try await client.start()  // its SETTINGS is the first
        var pings = ByteBuffer()
        for _ in 0..<3 { pings.writeImmutableBuffer(HTTP2TestClient.frame(.ping, stream: 0, payload: ByteBuffer(repeating: 1, count: 8))) }
        try await client.send(pings)
        let frames = try await client.drain()
        #expect(frames.map(\.type) == [.ping, .ping, .goAway])
        #expect(frames.last?.errorCode == .enhanceYourCalm)
    }

    @Test func tooManyContinuationFramesEndTheConnection() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture()) { $0.maxContinuationFrames = 2 }
        try await client.start()
        var bytes = HTTP2TestClient.frame(.headers, flags: .endStream, stream: 1, payload: ByteBuffer(bytes: [0x82]))
        for _ in 0..<3 { bytes.writeImmutableBuffer(HTTP2TestClient.frame(.continuation, stream: 1, payload: ByteBuffer(bytes: [0x86]))) }
        try await client.send(bytes)
        #expect(try await client.next().errorCode == .enhanceYourCalm)
    }

    @Test(arguments: [
        ("a pseudo-header field", [(":path", "/")]),
        // Found by the differential fuzz target: trailers were checked for pseudo-header fields alone.
        ("a name with spaces", [("x- zg%y ", "1")]),
        ("an uppercase name", [("X-Trailer", "1")]),
        ("a line break in a value", [("x-trailer", "1\r\nx-b: 2")]),
        ("a connection-specific field", [("connection", "close")]),
    ])
    func malformedTrailersAreResetWithProtocolError(_ name: String, _ trailers: [(String, String)]) async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.start()
        try await client.request(1, "/dns-query", method: "POST", endStream: false)
        try await client.send(
            HTTP2TestClient.frame(.headers, flags: [.endHeaders, .endStream], stream: 1, payload: try client.headerBlock(trailers))
        )
        let reset = try await client.next()
        #expect(reset.type == .rstStream && reset.errorCode == .protocolError, "trailers with \(name)")
    }

    @Test func aHitTheClientWillNotTakeIsResetAtTheDeadline() async throws {
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture) { $0.idleTimeout = .seconds(60) }
        try await client.start(settings: [(HTTP2Setting.initialWindowSize, 0)])
        try await client.request(1, Self.hitPath)
        #expect(try await client.drain().map(\.type) == [.headers])
        await client.channel.testingEventLoop.advanceTime(by: .seconds(61))
        #expect(try await client.next().errorCode == .cancel)
        await client.channel.testingEventLoop.advanceTime(by: .seconds(61))
        #expect(try await client.next().type == .goAway, "and then the idle connection goes")
    }

    @Test func anotherFrameInsideAHeaderBlockIsAProtocolError() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.start()
        let block = try client.headerBlock(HTTP2TestClient.requestFields("/healthz"))
        try await client.send(HTTP2TestClient.frame(.headers, flags: .endStream, stream: 1, payload: block))
        try await client.send(HTTP2TestClient.frame(.ping, stream: 0, payload: ByteBuffer(repeating: 0, count: 8)))
        #expect(try await client.next().errorCode == .protocolError)
    }

    @Test(arguments: [(UInt32(5), HTTP2ErrorCode.streamClosed), (3, .protocolError)])
    func headersBelowTheLastStreamAreStreamClosedOrAnUnexpectedID(_ stream: UInt32, _ code: HTTP2ErrorCode) async throws {
        // Stream 5 was used and answered: closed (RFC 9113 §5.1). Stream 3 was skipped: an unexpected stream
        // identifier (§5.1.1).
        let fixture = try await primed()
        let client = try await HTTP2TestClient(fixture)
        try await client.start()
        try await client.request(5, Self.hitPath)
        _ = try await client.response(5)
        try await client.request(stream, Self.hitPath)
        let goAway = try await client.next()
        #expect(goAway.type == .goAway && goAway.errorCode == code)
    }

    @Test func theClientMustStartWithThePreface() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        try await client.send(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        let frames = try await client.drain()
        #expect(frames.map(\.type) == [.settings, .goAway])
        #expect(frames.last?.errorCode == .protocolError)
        try await client.waitForClose()
    }

    @Test func thePrefaceMustBeFollowedBySettings() async throws {
        let client = try await HTTP2TestClient(try ServiceFixture())
        var bytes = ByteBuffer(bytes: HTTP2Limits.clientPreface)
        bytes.writeImmutableBuffer(HTTP2TestClient.frame(.ping, stream: 0, payload: ByteBuffer(repeating: 0, count: 8)))
        try await client.send(bytes)
        let frames = try await client.drain()
        #expect(frames.last?.type == .goAway && frames.last?.errorCode == .protocolError)
    }
}
