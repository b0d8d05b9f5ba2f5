import HTTPDNSCore
import HTTPDNSNetworking
import NIOCore
import NIOSSL

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
    /// Checks the certificate of an HTTP/2 connection AsyncHTTPClient has just set up; one that fails is refused as
    /// ``RefusedConnection`` says (its pool must take it), and every request given it fails with the check's error,
    /// unwritten (``RefusedConnection/checkStream(_:)``, the stream initializer).
    static func checkHTTP2(_ channel: any Channel, serverName: String?, pins: Set<SPKIPin>) -> EventLoopFuture<Void> {
        channel.nioSSL_peerCertificate().flatMapThrowing { certificate in
            try verify(certificate, serverName: serverName, pins: pins)
        }.flatMapError { error in
            RefusedConnection.refuse(channel, because: error)
        }
    }
}

/// The certificate does not hold the configured server name as a DNS name.
struct CertificateNameMismatch: CertificateRejectionError {
    let description: String
}
