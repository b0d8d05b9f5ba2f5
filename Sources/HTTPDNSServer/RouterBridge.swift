import HTTPDNSServerTransport
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// The router, reached from an HTTP/2 stream (``HTTP2ServerConnection``) without Hummingbird's per-stream async
/// channel: it answers as Hummingbird's application would (request id in the log metadata, errors turned into
/// their responses). The connection's encoder adds the `Date` header.
struct RouterBridge: RouterResponding {
    let responder: RouterResponder<HTTPDNSRequestContext>
    let logger: Logger
    /// The largest request body a route reads (a DoH POST); one byte more is kept, so the route can refuse it.
    let maxBodyBytes: Int

    /// The router's response to `request`, read on `channel` (its remote address is the client's).
    func respond(to request: Request, channel: any Channel) async -> Response {
        var logger = self.logger
        logger[metadataKey: "hb.request.id"] = "\(RequestID())"
        let context = HTTPDNSRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        do {
            return try await responder.respond(to: request, context: context)
        } catch {
            logger.debug("unanswered error", metadata: ["error.type": "\(error)"])
            return Response(status: .internalServerError)
        }
    }
}
