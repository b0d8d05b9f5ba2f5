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
        guard target.utf8.count <= admission.maxURLLength else { return nil }
        if let plain = PlainTarget(target) {
            return reply(path: plain.path, parameters: plain, target: target, channel: channel)
        }
        let uri = URI(target)
        return reply(path: uri.path[...], parameters: uri.queryParameters, target: target, channel: channel)
    }

    private func reply(path: Substring, parameters: some QueryParameters, target: String, channel: any Channel) -> (Reply, route: String)? {
        let route: String
        let reply: Reply?
        switch path {
        case "/d":
            route = "/d"
            reply = native.cachedSingle(parameters)
        case "/dns-query":
            route = "/dns-query"
            reply = doh.cachedGet(parameters)
        default:
            return nil
        }
        guard let reply else { return nil }
        do {
            try admission.admit(target: target, client: { channel.remoteAddress?.ipAddress ?? "unknown" })
            return (reply, route)
        } catch {
            admission.countRejection(error, logger: logger)
            return (error.reply, route)
        }
    }
}
