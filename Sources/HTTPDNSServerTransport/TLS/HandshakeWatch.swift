import NIOCore

/// Watches a TLS connection from accept until ALPN has chosen its protocol, when no protocol handler is there yet.
///
/// - A graceful shutdown (`ChannelShouldQuiesceEvent`) that arrives before the protocol is chosen closes the
///   connection at once: no request can be in flight before the handshake ends. Without this the event would reach
///   the end of the pipeline and be lost, and the shutdown would wait for a handshake that may never come.
/// - A shutdown that arrives after the protocol is chosen but before its handlers are in place is remembered, and
///   ``replay(on:)`` tells them.
/// - A handshake not finished within `timeout` (the service's header timeout) closes the connection, so a client that
///   connects and says nothing, or speaks too slowly, holds a descriptor for no longer than an idle one would.
final class HandshakeWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private(set) var protocolChosen = false
    private(set) var quiesced = false

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        guard protocolChosen else {
            context.close(promise: nil)
            return
        }
        quiesced = true
        context.fireUserInboundEventTriggered(event)
    }

    /// ALPN has chosen the protocol: the handshake is over. On the channel's event loop.
    func chooseProtocol() {
        protocolChosen = true
        deadline?.cancel()
        deadline = nil
    }

    /// Fires the shutdown again, for handlers added after it arrived. On the channel's event loop.
    func replay(on channel: any Channel) {
        guard quiesced else { return }
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
    }
}
