import NIOSSL

/// An error our own checks of a peer's certificate throw (a pin that does not match, a certificate that does not hold
/// the name as a DNS name): each is a rejection of the certificate, and says why in its description.
package protocol CertificateRejectionError: Error, CustomStringConvertible {}

/// Whether an error of a TLS connection means the peer's certificate was not accepted: it did not verify, it holds
/// neither the name nor the address asked, it failed one of our own checks. A connection closed during the handshake,
/// or TLS spoken to a port that does not, is not: that is the peer being unreachable, not someone in the way.
///
/// The one classifier of certificate errors: the HTTPS sources, the interceptor and `httpdns health` all ask it.
package enum CertificateRejection {
    /// What was wrong with the certificate, or nil when `error` is not a certificate's rejection.
    package static func reason(_ error: any Error) -> String? {
        if let ours = error as? any CertificateRejectionError { return ours.description }
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "it holds neither the name nor the address asked (\(extra))"
        }
        // BoringSSL's reason is only in the error's text: NIOSSL keeps the packed error code private, and a failed
        // verification reaches us as a handshake failure like any other. This is the one place that reads it.
        if case .handshakeFailed = error as? NIOSSLError, "\(error)".contains("CERTIFICATE_VERIFY_FAILED") {
            return "it did not verify (\(error))"
        }
        return nil
    }
}
