import HTTPTypes
import NIOCore

/// A stream whose request is still being read or whose response is still being sent. A cache hit answered as its
/// HEADERS frame is read never becomes one.
struct HTTP2ServerStream {
    let head: HTTP2RequestHead
    /// The body so far, up to one byte past the largest the router reads.
    var body = ByteBuffer()
    /// The read (``HTTP2ServerConnection/readsEnded`` then) in which the stream was opened.
    var openedInRead: UInt64 = 0
    /// All the DATA the client sent, to check against `content-length`.
    var bodyBytesReceived = 0
    /// Body bytes kept for the router, held (against the connection's window and the service's budget) until the
    /// stream leaves the table.
    var heldBytes = 0
    var requestEnded = false
    /// How much more DATA the client may send on this stream before this side tops the window up.
    var receiveWindow = HTTP2Limits.defaultWindowSize
    /// How much DATA this side may send on this stream.
    var sendWindow: Int

    /// The router is answering, or a lookup the cache missed (``CacheMiss``) is under way.
    var answering: Answering?
    /// Body bytes not yet sent for want of flow-control credit.
    var unsent = ByteBuffer()
    /// The response ends after `unsent` (and the trailers, if any).
    var endQueued = false
    var trailers: HTTPFields?
    /// Completed when `unsent` has gone out and the socket takes more: the router's writer waits for it, so a large
    /// response is held back by the client's flow control and by the socket rather than kept in memory.
    var unsentDrained: EventLoopPromise<Void>?
    /// Resets the stream if it is still open after the idle timeout.
    var deadline: Scheduled<Void>?

    enum Answering {
        case router(Task<Void, Never>)
        case lookUp(CacheMiss.Cancellation)
    }

    init(head: HTTP2RequestHead, sendWindow: Int) {
        self.head = head
        self.sendWindow = sendWindow
    }

    var isHEAD: Bool { head.method == "HEAD" }

    /// The stream is gone (reset, timed out, or its connection closed): the router's task is cancelled and its
    /// writer told. A lookup is let go by ``HTTP2ServerConnection/abandonStream(_:)``.
    func abandon() {
        if case .router(let task) = answering { task.cancel() }
        deadline?.cancel()
        unsentDrained?.fail(ChannelError.ioOnClosedChannel)
    }
}
