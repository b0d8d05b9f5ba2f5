import HTTPDNSCore
import HTTPDNSNetworking
import NIOCore
import NIOSSL

/// The certificate of a connection made to a resolved address must hold the original host as a DNS name.
///
/// NIOSSL's own check accepts a certificate whose IP address SAN is the address connected to, even when a host name
/// was asked. For the interceptor that is not enough: the address came from a resolver, perhaps a lying one, and a
/// certificate for an address proves nothing about the name. So each new connection is checked once more, after
/// NIOSSL's check has passed: a certificate with subject alternative names must hold a DNS name that matches the
/// host (exactly, or a `*` first label standing for exactly one label). A certificate without any (its common name,
/// which NIOSSL checked against the host) passes. A plain http connection has nothing to check.
struct HostCertificateMismatch: CertificateRejectionError {
    let host: String
    let names: [String]

    var description: String {
        "it does not hold \(host) as a DNS name (only \(names.isEmpty ? "addresses" : names.joined(separator: ", ")))"
    }

    /// Checks the certificate of an HTTP/1.1 connection AsyncHTTPClient has just set up, and closes the connection
    /// when it fails: AsyncHTTPClient hands a connection to its pool only once this succeeds. An HTTP/2 connection
    /// that fails is refused instead (``RefusedConnection``): its pool must take it, and every request given it fails
    /// with this error, unwritten.
    ///
    /// Synchronous on the channel's event loop (AsyncHTTPClient calls it there): the connection is judged before
    /// anything else can happen on it, which its pool relies on when the check fails.
    static func check(_ channel: any Channel, host: String, http2: Bool = false) -> EventLoopFuture<Void> {
        do {
            // Plain http: no TLS handler, nothing to check.
            guard let tls = try? channel.pipeline.syncOperations.handler(type: NIOSSLHandler.self) else {
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            guard let certificate = tls.peerCertificate else { throw HostCertificateMismatch(host: host, names: []) }
            try verify(certificate, host: host)
            return channel.eventLoop.makeSucceededVoidFuture()
        } catch {
            if http2 { return RefusedConnection.refuse(channel, because: error) }
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    private static func verify(_ certificate: NIOSSLCertificate, host: String) throws {
        if case .doesNotHold(let names, _) = PeerCertificateName.check(certificate, holds: host) {
            throw HostCertificateMismatch(host: host, names: names)
        }
    }

    /// Whether the DNS name `pattern` of a certificate covers `host` (``CertificateNameMatch``).
    static func matches(_ pattern: String, _ host: String) -> Bool {
        CertificateNameMatch.matches(pattern, host)
    }
}
