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
