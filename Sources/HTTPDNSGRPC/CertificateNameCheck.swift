#if GRPC
import GRPCNIOTransportHTTP2Posix
import HTTPDNSCore
import HTTPDNSNetworking
import NIOCore
import NIOSSL
import NIOTLS

extension HTTP2ClientTransport.Posix.Config {
    /// Makes every TLS connection of the transport refuse a server certificate that does not hold `host` as a DNS
    /// name.
    ///
    /// The channel connects to addresses a resolver gave, perhaps a lying one, and NIOSSL accepts a certificate whose
    /// IP address SAN is the address connected to, whatever name was asked: a certificate for an address proves
    /// nothing about the name. So each connection is checked once more when its handshake has passed TLS's own
    /// verification, before any call is sent on it: a certificate with subject alternative names must hold a DNS
    /// name that matches `host` (exactly, or with a `*` first label standing for exactly one label). One without
    /// any passes (TLS's check matched its common name against the host). A connection that fails is closed, and the
    /// calls waiting for it fail with ``HTTPDNSGRPCError`` `certificateRejected`, whose message says why; a
    /// certificate TLS itself refused (another name, an untrusted issuer) fails them with that code too.
    ///
    /// This check adds to TLS's verification and never replaces it: keep the transport's
    /// `serverCertificateVerification` at `.fullVerification` and set no `customVerificationCallback` (which
    /// would replace NIOSSL's verification), as `HTTP2ClientTransport.Posix(httpdns:…)` insists. A plaintext
    /// connection has no certificate to check.
    ///
    /// It is attached through `channelDebuggingCallbacks.onCreateTCPConnection`; a callback set there before is
    /// kept, and runs after the check is attached.
    ///
    /// - Parameter host: the name the server's certificate must hold: the target's host.
    public mutating func requireCertificateName(_ host: HostName) {
        let next = channelDebuggingCallbacks.onCreateTCPConnection
        let name = host.value
        channelDebuggingCallbacks.onCreateTCPConnection = { channel in
            // gRPC calls this on the channel's event loop, from its initializer; be safe if it ever does not.
            let attached: EventLoopFuture<Void>
            if channel.eventLoop.inEventLoop {
                attached = channel.eventLoop.makeCompletedFuture { try CertificateNameCheck.attach(to: channel, host: name) }
            } else {
                attached = channel.eventLoop.submit { try CertificateNameCheck.attach(to: channel, host: name) }
            }
            guard let next else { return attached }
            return attached.flatMap { _ in next(channel) }
        }
    }
}

/// The per-connection check of `HTTP2ClientTransport.Posix.Config.requireCertificateName(_:)`,
/// right after the TLS handler: it judges the certificate when the handshake completes (NIOSSL tells the handlers
/// after it before it passes on any data or sends any buffered write), closes the connection with an
/// ``HTTPDNSGRPCError`` when the certificate does not hold the name, and then drops whatever else comes, so the
/// error gRPC reports is that one. A certificate TLS itself refused is reported under the same code, with TLS's
/// error as the cause. Once the certificate has passed, the check takes itself out of the pipeline.
final class CertificateNameCheck: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias InboundOut = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private let host: String
    private let tls: NIOSSLHandler
    private var refusal: HTTPDNSGRPCError?

    private init(host: String, tls: NIOSSLHandler) {
        self.host = host
        self.tls = tls
    }

    /// Puts the check right after the channel's TLS handler; a channel without one (plaintext) has nothing to check.
    /// On the channel's event loop.
    static func attach(to channel: any Channel, host: String) throws {
        let pipeline = channel.pipeline.syncOperations
        guard let tls = try? pipeline.handler(type: NIOSSLHandler.self) else { return }
        try pipeline.addHandler(CertificateNameCheck(host: host, tls: tls), position: .after(tls))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard refusal == nil else { return }
        guard case .handshakeCompleted? = event as? TLSUserEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if let reason = Self.reasonToRefuse(tls.peerCertificate, host: host) {
            refuse(context, HTTPDNSGRPCError(.certificateRejected, host: host, address: Self.describe(context.channel.remoteAddress), reason: reason))
            return
        }
        context.fireUserInboundEventTriggered(event)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard refusal == nil else { return }
        // TLS's own refusal (another name, an untrusted issuer), said as such.
        if let reason = CertificateRejection.reason(error) {
            refuse(
                context,
                HTTPDNSGRPCError(
                    .certificateRejected,
                    host: host,
                    address: Self.describe(context.channel.remoteAddress),
                    reason: reason,
                    cause: error
                )
            )
            return
        }
        context.fireErrorCaught(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refusal == nil else { return }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let refusal {
            promise?.fail(refusal)
            return
        }
        context.write(data, promise: promise)
    }

    /// Fails the connection with `error` (gRPC's connection handler takes the first error it is told of as the
    /// reason, and closes), closes it, and drops what comes after.
    private func refuse(_ context: ChannelHandlerContext, _ error: HTTPDNSGRPCError) {
        refusal = error
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    /// Why `certificate` does not do for `host`, or nil when it does.
    static func reasonToRefuse(_ certificate: NIOSSLCertificate?, host: String) -> String? {
        guard let certificate else { return "the server sent no certificate" }
        let outcome = PeerCertificateName.check(certificate, holds: host)
        guard outcome != .holds else { return nil }
        return "it does not hold \(host) as a DNS name (it holds \(outcome.held))"
    }

    /// Whether the DNS name `pattern` of a certificate covers `host`: the rules every name check of this package
    /// follows (`CertificateNameMatch` in HTTPDNSCore, shared with the interceptor and the NIO adapter).
    static func matches(_ pattern: String, _ host: String) -> Bool {
        CertificateNameMatch.matches(pattern, host)
    }

    /// `127.0.0.1:443`, `[::1]:443`.
    private static func describe(_ address: NIOCore.SocketAddress?) -> String? {
        guard let address, let ip = address.ipAddress, let port = address.port else { return nil }
        if case .v6 = address { return "[\(ip)]:\(port)" }
        return "\(ip):\(port)"
    }
}
#endif
