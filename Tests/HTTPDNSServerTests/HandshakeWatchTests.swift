import NIOCore
import NIOEmbedded
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// A TLS connection between accept and ALPN (``HandshakeWatch``): a graceful shutdown closes it at once, a handshake
/// that takes longer than the idle timeout closes it, and a shutdown that arrives while the chosen protocol's
/// handlers are being added reaches them once they are.
@Suite struct HandshakeWatchTests {
    final class EventRecorder: ChannelInboundHandler {
        typealias InboundIn = NIOAny
        var quiesceEvents = 0

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is ChannelShouldQuiesceEvent { quiesceEvents += 1 }
        }
    }

    static func connectedChannel(_ watch: HandshakeWatch) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(watch)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return channel
    }

    @Test func aShutdownBeforeTheProtocolIsChosenClosesTheConnection() throws {
        let channel = try Self.connectedChannel(HandshakeWatch(timeout: .seconds(60)))
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(!channel.isActive)
    }

    @Test func aHandshakeLongerThanTheTimeoutIsClosed() throws {
        let channel = try Self.connectedChannel(HandshakeWatch(timeout: .seconds(60)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test func onceTheProtocolIsChosenTheTimeoutNoLongerApplies() throws {
        let watch = HandshakeWatch(timeout: .seconds(60))
        let channel = try Self.connectedChannel(watch)
        watch.chooseProtocol()
        channel.embeddedEventLoop.advanceTime(by: .seconds(3600))
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    @Test func aShutdownWhileTheHandlersAreAddedIsReplayedToThem() throws {
        let watch = HandshakeWatch(timeout: .seconds(60))
        let channel = try Self.connectedChannel(watch)
        watch.chooseProtocol()
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(channel.isActive, "the protocol is chosen: the shutdown is for its handlers to carry out")
        let recorder = EventRecorder()
        try channel.pipeline.syncOperations.addHandler(recorder)
        #expect(recorder.quiesceEvents == 0, "added after the event went by")
        watch.replay(on: channel)
        #expect(recorder.quiesceEvents == 1)
        _ = try channel.finish()
    }

    @Test func withoutAShutdownNothingIsReplayed() throws {
        let watch = HandshakeWatch(timeout: .seconds(60))
        let channel = try Self.connectedChannel(watch)
        watch.chooseProtocol()
        let recorder = EventRecorder()
        try channel.pipeline.syncOperations.addHandler(recorder)
        watch.replay(on: channel)
        #expect(recorder.quiesceEvents == 0)
        _ = try channel.finish()
    }
}
