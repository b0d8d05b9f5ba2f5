import HTTPDNSCore
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

#if canImport(Glibc)
    import Glibc
#endif

/// Answers `GET /d` and `GET /dns-query` on an HTTP/2 stream's event loop when the cache holds the answer
/// (``CacheHitResponder``), and hands every other request on to the router unchanged. HTTP/1.1 connections have
/// ``HTTP1FrontHandler`` instead, which does the same below the HTTP types conversion.
///
/// Responses keep their requests' order: while any request handed on has not been answered in full, the ones
/// behind it are handed on too (a stream carries one request, but the handler does not rely on it).
final class CacheHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let responder: CacheHitResponder
    private var state = CacheHitReading.idle
    private var responsesOwed = 0
    private var flushPending = false
    private var date = HTTPDate()

    init(responder: CacheHitResponder) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            let started = ContinuousClock.now
            if responsesOwed == 0, request.method == .get, !Self.asksToClose(request), let target = request.path,
                let (reply, route) = responder.reply(toGET: target, channel: context.channel)
            {
                state = .answering(reply, route: route, started: started)
            } else {
                responsesOwed += 1
                state = .handingOn
                context.fireChannelRead(data)
            }
        case .body:
            if case .answering = state { return }
            context.fireChannelRead(data)
        case .end:
            guard case .answering(let reply, let route, let started) = state else {
                state = .idle
                context.fireChannelRead(data)
                return
            }
            state = .idle
            write(reply, context: context)
            responder.requestMetrics.record(route: route, method: .get, status: reply.status, since: started)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if flushPending {
            flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), responsesOwed > 0 {
            responsesOwed -= 1
        }
        context.write(data, promise: promise)
    }

    /// Writes the reply; the flush waits for the end of the read, so answers to pipelined requests go out together.
    private func write(_ reply: Reply, context: ChannelHandlerContext) {
        var headers = reply.headers
        headers[.contentLength] = String(reply.body.readableBytes)
        headers[.date] = date.current()
        context.write(wrapOutboundOut(.head(HTTPResponse(status: reply.status, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(reply.body)), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        flushPending = true
    }
}

/// Where the request being read is going, in ``CacheHitHandler`` and ``HTTP1FrontHandler``.
enum CacheHitReading {
    case idle
    /// The request is the router's: its parts go on.
    case handingOn
    /// The request is answered here once its end has been read; its body, if any, is dropped.
    case answering(Reply, route: String, started: ContinuousClock.Instant)
}

/// Whether a request can be answered from the cache on the event loop, and with what: what ``HTTP1FrontHandler``
/// and ``CacheHitHandler`` ask. A cache hit is the service's common case and its work is small; going through the
/// router costs two thread hand-offs (event loop to a Swift task and back) and two conversions of the HTTP types
/// that are most of a hit's time. The answer has the same bytes the router would send (both build them with
/// ``NativeAPI`` and ``DoHAPI``), after the same admission checks, and the same request metrics are recorded.
/// One per service, shared by every connection.
final class CacheHitResponder: Sendable {
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
        let uri = URI(target)
        let reply: Reply?
        switch uri.path {
        case "/d": reply = native.cachedSingle(uri.queryParameters)
        case "/dns-query": reply = doh.cachedGet(uri.queryParameters)
        default: return nil
        }
        guard let reply else { return nil }
        do {
            try admission.admit(target: target, client: { channel.remoteAddress?.ipAddress ?? "unknown" })
            return (reply, uri.path)
        } catch {
            admission.countRejection(error, logger: logger)
            return (error.reply, uri.path)
        }
    }
}

extension CacheHitHandler {
    /// A request asking to close the connection goes to the router, which closes it after answering.
    static func asksToClose(_ request: HTTPRequest) -> Bool {
        request.headerFields[values: .connection].contains { value in
            value.split(separator: ",").contains { $0.filter { $0 != " " && $0 != "\t" }.lowercased() == "close" }
        }
    }
}

/// The `Date` header's value (RFC 9110 IMF-fixdate), formatted once a second.
struct HTTPDate {
    private var second: time_t = -1
    private var text = ""

    mutating func current() -> String {
        let now = time(nil)
        if now != second {
            second = now
            text = Self.format(now)
        }
        return text
    }

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func format(_ seconds: time_t) -> String {
        var seconds = seconds
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(Self.days[Int(parts.tm_wday)]), \(twoDigits(parts.tm_mday)) \(Self.months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):\(twoDigits(parts.tm_sec)) GMT"
    }
}
