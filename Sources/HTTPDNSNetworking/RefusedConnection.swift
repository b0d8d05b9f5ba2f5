import NIOCore
import NIOSSL

/// How an AsyncHTTPClient HTTP/2 connection whose certificate fails a check of ours (a name NIOSSL does not check, a
/// pin) is refused without harm.
///
/// AsyncHTTPClient's pool must take an HTTP/2 connection once it is up: when its `http2ConnectionDebugInitializer`
/// fails, the pool forgets a connection that is still open, and that connection's close later stops the process (a
/// precondition). So the connection initializer always succeeds, and:
/// - a handler between TLS and HTTP/2 fails every write and drops every read: nothing of a request reaches TLS, and
///   nothing the peer sends reaches HTTP/2;
/// - every request the pool gives the connection fails with the refusal's error as its stream starts
///   (``checkStream(_:)``, the `http2StreamChannelDebugInitializer`): nothing of it passes the barrier. The pool hears of the
///   connection on its own event loop, later, so the connection must still be open then, or the request would fail
///   with a bare "I/O on closed channel";
/// - the socket is closed after ``holdTime``, without TLS's close (which would wait for the peer's), unless the peer
///   or the pool closes it first. Meanwhile every request to that address fails at once, saying why, rather than
///   each making (and losing) a connection of its own; after it, the next request makes a new connection, checked
///   anew (a certificate may have been replaced).
package enum RefusedConnection {
    /// How long a refused connection stays open, failing the requests given it.
    package static let holdTime: TimeAmount = .seconds(5)

    /// Refuses `channel` for `error`, as above. Call on the channel's event loop, from the connection initializer.
    /// - Returns: a succeeded future, unless the refusal could not be put in place (then the connection is closed and
    ///   the error returned: better the pool's trouble than a request on that connection).
    package static func refuse(_ channel: any Channel, because error: any Error) -> EventLoopFuture<Void> {
        let barrier = Barrier(error: error)
        do {
            let pipeline = channel.pipeline.syncOperations
            if let tls = try? pipeline.handler(type: NIOSSLHandler.self) {
                try pipeline.addHandler(barrier, position: .after(tls))
            } else {
                try pipeline.addHandler(barrier, position: .first)
            }
        } catch {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
        channel.eventLoop.scheduleTask(in: holdTime) {
            // From TLS's own place in the pipeline: the socket closes, with no close_notify to wait for.
            if let tls = try? channel.pipeline.syncOperations.context(handlerType: NIOSSLHandler.self) {
                tls.close(promise: nil)
            } else {
                channel.close(promise: nil)
            }
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }

    /// For `http2StreamChannelDebugInitializer`: on a refused connection, the stream's request fails with the
    /// refusal's error. The initializer itself must succeed (AsyncHTTPClient stops the process when a stream it has
    /// set up is closed before its request starts), so the error is raised on the stream on the next tick, once the
    /// request has started: its writes never pass the barrier, and it fails with that error.
    package static func checkStream(_ stream: any Channel) -> EventLoopFuture<Void> {
        if let parent = stream.parent, let barrier = try? parent.pipeline.syncOperations.handler(type: Barrier.self) {
            stream.eventLoop.execute {
                stream.pipeline.fireErrorCaught(barrier.error)
            }
        }
        return stream.eventLoop.makeSucceededVoidFuture()
    }

    /// Between TLS and HTTP/2 on a refused connection: every write fails, every read is dropped.
    final class Barrier: ChannelDuplexHandler, RemovableChannelHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundIn = ByteBuffer
        let error: any Error

        init(error: any Error) { self.error = error }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            promise?.fail(error)
        }

        func flush(context: ChannelHandlerContext) {}
    }
}
