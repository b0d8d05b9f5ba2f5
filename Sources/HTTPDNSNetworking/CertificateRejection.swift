import AsyncHTTPClient
import NIOSSL

/// Whether an error of a TLS connection means the peer's certificate was not accepted: it did not verify, it holds
/// neither the name nor the address asked, or its key is none of the pins. A connection closed during the handshake,
/// or TLS spoken to a port that does not, is not: that is the peer being unreachable, not someone in the way.
public enum CertificateRejection {
    /// What was wrong with the certificate, or nil when `error` is not a certificate's rejection.
    public static func reason(_ error: any Error) -> String? {
        if let mismatch = error as? SPKIPinMismatch { return "\(mismatch)" }
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "it holds neither the name nor the address asked (\(extra))"
        }
        if case .handshakeFailed = error as? NIOSSLError, "\(error)".contains("CERTIFICATE_VERIFY_FAILED") {
            return "it did not verify (\(error))"
        }
        return nil
    }
}
