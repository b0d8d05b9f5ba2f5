import Synchronization
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
/// - every request the pool gives the connection fails with the refusal's error as its stream becomes active, and
///   nothing the peer sends on the stream reaches the request (``checkStream(_:)``, the
///   `http2StreamChannelDebugInitializer`): frames the peer sent in the same read as its SETTINGS, which HTTP/2
///   decodes after the barrier is in place, are dropped there too;
/// - the socket is closed after ``holdTime``, without TLS's close (which would wait for the peer's), unless the peer
///   or the pool closes it first. Meanwhile every request to that address fails at once, saying why, rather than
///   each making (and losing) a connection of its own; after it, the next request makes a new connection, checked
///   anew (a certificate may have been replaced).
package enum RefusedConnection {
    /// How long a refused connection stays open, failing the requests given it.
    package static let holdTime: TimeAmount = .seconds(5)

    /// Refused connections still open, in this process: while there are none, a stream's check is one load.
    private static let open = Atomic<Int>(0)

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
        let close = channel.eventLoop.scheduleTask(in: holdTime) {
            // From TLS's own place in the pipeline: the socket closes, with no close_notify to wait for.
            if let tls = try? channel.pipeline.syncOperations.context(handlerType: NIOSSLHandler.self) {
                tls.close(promise: nil)
            } else {
                channel.close(promise: nil)
            }
        }
        open.add(1, ordering: .relaxed)
        channel.closeFuture.whenComplete { _ in
            close.cancel()
            open.subtract(1, ordering: .relaxed)
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }

    /// For `http2StreamChannelDebugInitializer`: on a refused connection, a handler at the head of the stream's
    /// pipeline drops everything the peer sends on it and, as the stream becomes active (once the request has
    /// started, its head written into the barrier), fails the request with the refusal's error. The initializer itself
    /// must succeed: AsyncHTTPClient stops the process when a stream it has set up closes before its request starts.
    package static func checkStream(_ stream: any Channel) -> EventLoopFuture<Void> {
        // The count is raised on the connection's event loop before any stream of it is made, on that same loop.
        if open.load(ordering: .relaxed) > 0, let parent = stream.parent, let barrier = try? parent.pipeline.syncOperations.handler(type: Barrier.self) {
            do {
                try stream.pipeline.syncOperations.addHandler(RefusedStream(error: barrier.error), position: .first)
            } catch {
                // Not expected on a stream being set up; the barrier still keeps the request off the wire.
            }
        }
        return stream.eventLoop.makeSucceededVoidFuture()
    }

    /// At the head of a stream on a refused connection: drops every frame the peer sends, and fails the request as
    /// the stream becomes active.
    final class RefusedStream: ChannelInboundHandler, RemovableChannelHandler, Sendable {
        typealias InboundIn = Any
        let error: any Error

        init(error: any Error) { self.error = error }

        func channelActive(context: ChannelHandlerContext) {
            context.fireChannelActive()
            context.fireErrorCaught(error)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
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
