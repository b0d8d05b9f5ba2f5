import NIOCore

/// Remembers a graceful shutdown asked for while TLS and ALPN are still setting the connection up, when no
/// protocol handler is there yet to hear it (the event would reach the end of the pipeline and be lost, and the
/// connection would outlive the shutdown). Once the protocol's handlers are in place, ``replay(on:)`` tells them.
final class QuiesceLatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private(set) var quiesced = false

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { quiesced = true }
        context.fireUserInboundEventTriggered(event)
    }

    /// Fires the shutdown again, for handlers added after it arrived. On the channel's event loop.
    func replay(on channel: any Channel) {
        guard quiesced else { return }
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
    }
}
