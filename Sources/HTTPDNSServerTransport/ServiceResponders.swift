import HummingbirdCore
import Logging
import NIOCore

/// What the connections ask the service for a GET they may answer on the event loop: the service's cache-hit
/// path. The transport knows nothing of routes; it writes what this returns.
public protocol CacheHitAnswering: Sendable {
    /// Where the request-duration timers of hits answered on the event loop are recorded.
    var requestMetrics: RequestMetrics { get }

    /// The reply to a GET of `target` read on `channel`, and its route for the metrics; nil hands the request to
    /// the router. Called on the event loop, so it must not block or suspend.
    func reply(toGET target: String, channel: any Channel) -> (Reply, route: String)?

    /// What to do with a GET of `target` read on `channel`: reply now (a cache hit), look it up without the router (a
    /// cache miss the service answers by itself), or hand it to the router. Called on the event loop, so it must not
    /// block or suspend. The default replies what ``reply(toGET:channel:)`` does and hands everything else on.
    ///
    /// `sendableAtOnce` is the most body bytes the connection can send now (the client's flow-control windows and
    /// frame size). A reply larger than that waits for the client's credit on a stream of its own, which the
    /// connection may refuse (REFUSED_STREAM) when the service holds all the streams it will: the service answers
    /// such a hit as a ``CacheMiss`` that completes at once, so that the stream is taken before the client's rate is.
    func answer(toGET target: String, channel: any Channel, sendableAtOnce: Int) -> GETAnswer
}

extension CacheHitAnswering {
    public func answer(toGET target: String, channel: any Channel, sendableAtOnce: Int) -> GETAnswer {
        guard let (reply, route) = reply(toGET: target, channel: channel) else { return .router }
        return .reply(reply, route: route)
    }
}

/// How a GET is answered: see ``CacheHitAnswering/answer(toGET:channel:sendableAtOnce:)``.
public enum GETAnswer: Sendable {
    /// The reply, now.
    case reply(Reply, route: String)
    /// A lookup to start; its reply comes later.
    case lookUp(CacheMiss)
    /// Everything else, errors included, is the router's.
    case router
}

/// A GET the cache missed that the service answers without the router or a task: the connection starts it once, and
/// its completion is called at most once, on the event loop it names, with the reply. The request's URL was checked
/// before it was made; the client's rate is checked as it starts (a refusal is its reply), so that the connection
/// takes a stream for it first, as for the router's requests.
public struct CacheMiss: Sendable {
    /// The route, for the request metrics.
    public let route: String
    private let lookUp: @Sendable (any EventLoop, @escaping @Sendable (Reply) -> Void) -> Cancellation

    /// - Parameter lookUp: starts the lookup; calls the completion on the event loop it is given, and returns how to
    ///   stop waiting.
    public init(route: String, lookUp: @escaping @Sendable (_ eventLoop: any EventLoop, _ completion: @escaping @Sendable (Reply) -> Void) -> Cancellation) {
        self.route = route
        self.lookUp = lookUp
    }

    /// Starts the lookup; `completion` gets the reply on `eventLoop`, unless the lookup is cancelled first.
    public func start(on eventLoop: any EventLoop, _ completion: @escaping @Sendable (Reply) -> Void) -> Cancellation {
        lookUp(eventLoop, completion)
    }

    /// Stops waiting for a lookup's reply.
    public struct Cancellation: Sendable {
        private let cancel: @Sendable () -> Bool

        /// - Parameter cancel: true when the completion will not be called; false when it has been, or will be.
        public init(_ cancel: @escaping @Sendable () -> Bool) {
            self.cancel = cancel
        }

        /// A lookup that has completed already, or is sure to: nothing to cancel.
        public static let none = Cancellation { false }

        /// True when the completion will not be called; false when it has been, or will be (the answer came first).
        public func callAsFunction() -> Bool { cancel() }
    }
}

/// The router, as an HTTP/2 connection reaches it: a request in, a response out, in a task of its own.
public protocol RouterResponding: Sendable {
    /// The largest request body a route reads; one byte more is kept, so the route can refuse it.
    var maxBodyBytes: Int { get }
    var logger: Logger { get }

    /// The router's response to `request`, read on `channel` (its remote address is the client's). Errors are
    /// already turned into responses.
    func respond(to request: Request, channel: any Channel) async -> Response
}
