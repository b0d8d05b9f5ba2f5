import HTTPDNSCore
import HTTPDNSServerTransport
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// Whether a request can be answered from the cache on the event loop, and with what: what ``HTTP1FrontHandler``
/// and ``HTTP2ServerConnection`` ask. A cache hit is the service's common case and its work is small; going through the
/// router costs two thread hand-offs (event loop to a Swift task and back) and two conversions of the HTTP types
/// that are most of a hit's time. The answer has the same bytes the router would send (both build them with
/// ``NativeAPI`` and ``DoHAPI``), after the same admission checks, and the same request metrics are recorded.
/// One per service, shared by every connection.
final class CacheHitResponder: CacheHitAnswering {
    let native: NativeAPI
    let doh: DoHAPI
    let admission: Admission
    let requestMetrics: RequestMetrics
    let logger: Logger

    init(native: NativeAPI, doh: DoHAPI, admission: Admission, requestMetrics: RequestMetrics, logger: Logger) {
        self.native = native
        self.doh = doh
        self.admission = admission
        self.requestMetrics = requestMetrics
        self.logger = logger
    }

    /// The reply to a GET of `target`, and its route for the metrics, when it is `/d` or `/dns-query` and the
    /// cache answers; nil hands the request to the router, which answers everything else, errors included.
    ///
    /// The cache is asked before the client's rate, so that a request handed on takes one token, in the
    /// router. A request refused here for its rate has been counted as a cache hit.
    func reply(toGET target: String, channel: any Channel) -> (Reply, route: String)? {
        guard case .reply(let reply, let route) = local(target, channel: channel, lookingUp: false, sendableAtOnce: .max) else { return nil }
        return (reply, route)
    }

    /// As ``reply(toGET:channel:)``, and a valid `/d` or `/dns-query` for A or AAAA that the cache misses is looked
    /// up here too, without the router or a task: its reply is the one the router would give. The lookup is admitted
    /// (the client's rate) as it starts, once the connection has taken a stream for it, as the router admits a request
    /// after that: a request refused for the service's stream budget spends none of its client's rate. A hit whose
    /// reply is larger than `sendableAtOnce` needs such a stream too (to wait for the client's credit), and is
    /// answered the same way, by a lookup that completes at once.
    func answer(toGET target: String, channel: any Channel, sendableAtOnce: Int) -> GETAnswer {
        local(target, channel: channel, lookingUp: true, sendableAtOnce: sendableAtOnce)
    }

    private func local(_ target: String, channel: any Channel, lookingUp: Bool, sendableAtOnce: Int) -> GETAnswer {
        guard target.utf8.count <= admission.maxURLLength else { return .router }
        if let plain = PlainTarget(target) {
            return local(
                path: plain.path, parameters: plain, target: target, channel: channel, lookingUp: lookingUp, sendableAtOnce: sendableAtOnce
            )
        }
        let uri = URI(target)
        return local(
            path: uri.path[...], parameters: uri.queryParameters, target: target, channel: channel, lookingUp: lookingUp,
            sendableAtOnce: sendableAtOnce
        )
    }

    private func local(
        path: Substring, parameters: some QueryParameters, target: String, channel: any Channel, lookingUp: Bool, sendableAtOnce: Int
    ) -> GETAnswer {
        let route: String
        let answer: LocalAnswer
        switch path {
        case "/d":
            route = "/d"
            answer = native.localSingle(parameters, lookingUp: lookingUp)
        case "/dns-query":
            route = "/dns-query"
            answer = doh.localGet(parameters, lookingUp: lookingUp)
        default:
            return .router
        }
        switch answer {
        case .reply(let reply) where reply.body.readableBytes <= sendableAtOnce:
            return admit(target, channel: channel).map { .reply($0, route: route) } ?? .reply(reply, route: route)
        case .reply(let reply):
            return admittedOnStart(target, channel: channel, route: route) { eventLoop, completion in
                Self.complete(completion, with: reply, on: eventLoop)
                return .none
            }
        case .lookUp(let lookUp):
            return admittedOnStart(target, channel: channel, route: route, lookUp)
        case .router:
            return .router
        }
    }

    /// `lookUp` as a ``CacheMiss``, which the client's rate admits as the connection starts it: a refusal is its reply.
    private func admittedOnStart(
        _ target: String,
        channel: any Channel,
        route: String,
        _ lookUp: @escaping @Sendable (any EventLoop, @escaping @Sendable (Reply) -> Void) -> CacheMiss.Cancellation
    ) -> GETAnswer {
        .lookUp(
            CacheMiss(route: route) { [self] eventLoop, completion in
                guard let refusal = admit(target, channel: channel) else { return lookUp(eventLoop, completion) }
                Self.complete(completion, with: refusal, on: eventLoop)
                return .none
            }
        )
    }

    /// Calls `completion` with `reply` on `eventLoop`: at once on the connection's own loop, where it starts lookups.
    private static func complete(_ completion: @escaping @Sendable (Reply) -> Void, with reply: Reply, on eventLoop: any EventLoop) {
        if eventLoop.inEventLoop { completion(reply) } else { eventLoop.execute { completion(reply) } }
    }

    /// The refusal of a request the client may not make now (its rate), counted; nil when it is admitted.
    private func admit(_ target: String, channel: any Channel) -> Reply? {
        do {
            try admission.admit(target: target, client: { channel.remoteAddress?.ipAddress ?? "unknown" })
            return nil
        } catch {
            admission.countRejection(error, logger: logger)
            return error.reply
        }
    }
}

/// A GET's answer without the router (``CacheHitResponder``): the reply from the cache, a lookup to start whose
/// completion gets the reply, or the router's.
enum LocalAnswer {
    case reply(Reply)
    case lookUp(@Sendable (_ eventLoop: any EventLoop, _ completion: @escaping @Sendable (Reply) -> Void) -> CacheMiss.Cancellation)
    case router
}

extension CacheMiss.Cancellation {
    /// Cancels the completion a cache lookup is waiting with; nothing to cancel when the cache answered at once (no
    /// ticket).
    init(_ resolver: ResolverCache, _ ticket: ResolverCache.WaiterTicket?) {
        self = ticket.map { ticket in Self { resolver.cancel(ticket) } } ?? .none
    }
}
