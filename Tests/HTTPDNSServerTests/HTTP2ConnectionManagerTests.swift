import NIOCore
import NIOEmbedded
import NIOHTTP2
import NIOSSL
import Testing

@testable import HTTPDNSServer

/// The state of an HTTP/2 connection (``HTTP2ConnectionManager``): idle timeout and graceful shutdown.
@Suite struct HTTP2ConnectionManagerTests {
    private func connection() throws -> (EmbeddedChannel, HTTP2ConnectionManager) {
        let channel = EmbeddedChannel()
        // EmbeddedChannel only records the address; nothing is sent anywhere.
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let manager = HTTP2ConnectionManager(idleTimeout: .seconds(60), eventLoop: channel.eventLoop)
        try channel.pipeline.syncOperations.addHandler(manager)
        return (channel, manager)
    }

    @Test func aConnectionWithoutStreamsClosesAfterTheIdleTimeout() throws {
        let (channel, _) = try connection()
        channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }

    @Test func anOpenStreamKeepsItOpenAndItsCloseStartsTheClock() throws {
        let (channel, manager) = try connection()
        manager.streamDelegate.streamCreated(HTTP2StreamID(1), channel: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(120))
        #expect(channel.isActive, "a stream is open")
        manager.streamDelegate.streamClosed(HTTP2StreamID(1), channel: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }

    @Test func gracefulShutdownSendsGOAWAYAndClosesAfterTheLastStream() throws {
        let (channel, manager) = try connection()
        manager.streamDelegate.streamCreated(HTTP2StreamID(1), channel: channel)
        manager.streamDelegate.streamCreated(HTTP2StreamID(3), channel: channel)
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        let frame = try #require(try channel.readOutbound(as: HTTP2Frame.self))
        guard case .goAway(let lastStreamID, let errorCode, _) = frame.payload else {
            Issue.record("expected GOAWAY, got \(frame.payload)")
            return
        }
        #expect(frame.streamID == .rootStream)
        #expect(lastStreamID == HTTP2StreamID(3))
        #expect(errorCode == .noError)
        manager.streamDelegate.streamClosed(HTTP2StreamID(1), channel: channel)
        #expect(channel.isActive, "stream 3 is still being answered")
        manager.streamDelegate.streamClosed(HTTP2StreamID(3), channel: channel)
        #expect(!channel.isActive)
    }

    @Test func aStreamRefusedAfterGOAWAYLeavesTheConnectionOpenAndAConnectionErrorClosesIt() throws {
        let (channel, manager) = try connection()
        manager.streamDelegate.streamCreated(HTTP2StreamID(1), channel: channel)
        // How the HTTP/2 handler reports a stream opened after GOAWAY (ConnectionStreamsState in swift-nio-http2).
        channel.pipeline.fireErrorCaught(NIOHTTP2Errors.streamError(streamID: HTTP2StreamID(3), baseError: NIOHTTP2Errors.createdStreamAfterGoaway()))
        #expect(channel.isActive)
        channel.pipeline.fireErrorCaught(NIOHTTP2Errors.invalidALPNToken())
        #expect(!channel.isActive)
    }

    @Test(arguments: ["input closed", "unclean TLS shutdown"])
    func theClientClosingItsSideDrainsTheConnection(_ how: String) throws {
        let (channel, manager) = try connection()
        manager.streamDelegate.streamCreated(HTTP2StreamID(1), channel: channel)
        if how == "input closed" {
            channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        } else {
            channel.pipeline.fireErrorCaught(NIOSSLError.uncleanShutdown)
        }
        let frame = try #require(try channel.readOutbound(as: HTTP2Frame.self))
        guard case .goAway = frame.payload else {
            Issue.record("expected GOAWAY, got \(frame.payload)")
            return
        }
        #expect(channel.isActive, "stream 1 is still being answered")
        manager.streamDelegate.streamClosed(HTTP2StreamID(1), channel: channel)
        #expect(!channel.isActive)
    }

    @Test func aDrainEndsAfterTheIdleTimeoutEvenIfAStreamNeverCloses() throws {
        let (channel, manager) = try connection()
        manager.streamDelegate.streamCreated(HTTP2StreamID(1), channel: channel)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }

    @Test func aStreamIsResetWhenItOutlivesItsDeadline() throws {
        let stream = EmbeddedChannel()
        try stream.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        try stream.pipeline.syncOperations.addHandler(StreamDeadline(lifetime: .seconds(60)))
        stream.embeddedEventLoop.advanceTime(by: .seconds(59))
        #expect(stream.isActive)
        stream.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!stream.isActive)
    }

    @Test func gracefulShutdownOfAnIdleConnectionClosesAtOnce() throws {
        let (channel, _) = try connection()
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(try channel.readOutbound(as: HTTP2Frame.self) != nil)
        #expect(!channel.isActive)
    }
}
