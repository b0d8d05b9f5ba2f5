import HTTPDNSCore
import HTTPDNSNIO
import NIOCore
import NIOPosix
import NIOSSL

/// A TLS connection to `host`, resolved through `resolver`: NIO's Happy Eyeballs over the answer, and `host` kept
/// for SNI and the certificate check, which must find it as a DNS name (not only the address connected to).
func connectTLS(
    to host: String,
    port: Int,
    resolver: HostResolver,
    tls: NIOSSLContext,
    group: any EventLoopGroup
) async throws -> any Channel {
    try await ClientBootstrap(group: group)
        .resolving(with: resolver)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandlers([
                    NIOSSLClientHandler(context: tls, serverHostname: host),
                    CertificateNameHandler(host: host),
                ])
            }
        }
        .connect(host: host, port: port)
        .get()
}
