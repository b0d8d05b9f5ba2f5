import Hummingbird
import NIOCore

/// The request context of the HTTPDNS service: Hummingbird's, plus the client's address for rate limiting.
public struct HTTPDNSRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The client's IP address as text, or `unknown`.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}
