import NIOCore
import NIOEmbedded
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSServerTransport

/// A graceful shutdown asked for while a TLS connection is still negotiating its protocol reaches the protocol's
/// handlers once they are added (``QuiesceLatch``).
@Suite struct QuiesceLatchTests {
    final class EventRecorder: ChannelInboundHandler {
        typealias InboundIn = NIOAny
        var quiesceEvents = 0

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is ChannelShouldQuiesceEvent { quiesceEvents += 1 }
        }
    }

    @Test func aShutdownBeforeTheHandlersAreAddedIsReplayedToThem() throws {
        let channel = EmbeddedChannel()
        let latch = QuiesceLatch()
        try channel.pipeline.syncOperations.addHandler(latch)
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        let recorder = EventRecorder()
        try channel.pipeline.syncOperations.addHandler(recorder)
        #expect(recorder.quiesceEvents == 0, "added after the event went by")
        latch.replay(on: channel)
        #expect(recorder.quiesceEvents == 1)
    }

    @Test func withoutAShutdownNothingIsReplayed() throws {
        let channel = EmbeddedChannel()
        let latch = QuiesceLatch()
        let recorder = EventRecorder()
        try channel.pipeline.syncOperations.addHandler(latch)
        try channel.pipeline.syncOperations.addHandler(recorder)
        latch.replay(on: channel)
        #expect(recorder.quiesceEvents == 0)
    }
}
