import HTTPDNSCore
import HTTPDNSNetworking
import NIOCore
import NIOSSL
import HTTPDNSSynchronization

/// The checks of a service's or resolver's certificate that NIOSSL does not make, once its verification has passed:
/// with a configured server name, that the certificate holds it as a DNS name; with pins, that its public key is one
/// of them. Every client of this module runs them on each new connection.
enum PeerCertificateCheck {
    /// - Throws: a `CertificateRejectionError` saying what the certificate lacks.
    static func verify(_ certificate: NIOSSLCertificate?, serverName: String?, pins: Set<SPKIPin>) throws {
        guard serverName != nil || !pins.isEmpty else { return }
        guard let certificate else { throw CertificateNameMismatch(description: "the server presented no certificate") }
        if let name = serverName, case let outcome = PeerCertificateName.check(certificate, holds: name), outcome != .holds {
            throw CertificateNameMismatch(description: "it does not hold \(name) as a DNS name (it holds \(outcome.held))")
        }
        guard !pins.isEmpty else { return }
        let presented: SPKIPin
        do {
            presented = try SPKIPin(of: certificate)
        } catch {
            throw SPKIPinMismatch(presented: "a key that could not be read: \(error)")
        }
        guard pins.contains(presented) else { throw SPKIPinMismatch(presented: presented.description) }
    }

    /// Checks the certificate of a connection AsyncHTTPClient has just set up, and closes the connection when it
    /// fails: AsyncHTTPClient hands a connection to its pool only once this succeeds.
    static func check(_ channel: any Channel, serverName: String?, pins: Set<SPKIPin>) -> EventLoopFuture<Void> {
        channel.nioSSL_peerCertificate().flatMapThrowing { certificate in
            try verify(certificate, serverName: serverName, pins: pins)
        }.flatMapError { error in
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
    }
}

extension PeerCertificateCheck {
    /// The last certificate an address's HTTP/2 connection was refused for, and when: what a request that waited for
    /// that connection is told, since it sees only the close.
    final class Rejections: Sendable {
        private let last: Mutex<(at: NIODeadline, error: any Error)?> = Mutex(nil)

        func record(_ error: any Error) { last.withLock { $0 = (.now(), error) } }

        /// The rejection recorded at `since` or later, if any.
        func rejection(since: NIODeadline) -> (any Error)? {
            last.withLock { last in last.flatMap { $0.at >= since ? $0.error : nil } }
        }
    }

    /// Checks the certificate of an HTTP/2 connection AsyncHTTPClient has just set up. Its pool must take an HTTP/2
    /// connection once it is up (when a failed check is reported instead, the pool loses track of a connection whose
    /// close later stops the process), so a connection whose certificate fails is made unable to write (nothing of a
    /// request reaches TLS: the writes fail here), closed, and its failure recorded in `rejections`, where the request
    /// that waited for it finds why it failed.
    static func checkHTTP2(_ channel: any Channel, serverName: String?, pins: Set<SPKIPin>, rejections: Rejections) -> EventLoopFuture<Void> {
        channel.nioSSL_peerCertificate().flatMapThrowing { certificate in
            try verify(certificate, serverName: serverName, pins: pins)
        }.flatMapError { error in
            rejections.record(error)
            let refuse = RefusingWrites(error: error)
            do {
                let tls = try channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
                try channel.pipeline.syncOperations.addHandler(refuse, position: .after(tls))
            } catch {
                // Without its TLS handler the channel cannot carry a request anyway; it is closed all the same.
            }
            channel.close(promise: nil)
            return channel.eventLoop.makeSucceededVoidFuture()
        }
    }

    /// Fails every write that reaches it: between TLS and HTTP/2 on a connection whose certificate was refused.
    private final class RefusingWrites: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = ByteBuffer
        let error: any Error

        init(error: any Error) { self.error = error }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            promise?.fail(error)
        }

        func flush(context: ChannelHandlerContext) {}
    }
}

/// The certificate does not hold the configured server name as a DNS name.
struct CertificateNameMismatch: CertificateRejectionError {
    let description: String
}
