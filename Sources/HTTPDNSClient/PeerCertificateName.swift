import HTTPDNSCore
import NIOSSL

/// Whether a peer's certificate holds a name as a DNS name: NIOSSL's own check also accepts a certificate whose IP
/// address SAN is the address connected to, whatever name was asked, so a configured name is checked once more.
enum PeerCertificateName {
    enum Outcome {
        case holds
        /// The DNS names it holds instead (empty: only addresses).
        case doesNotHold([String])
    }

    /// A certificate with subject alternative names must hold a DNS name matching `name`; one without any was checked
    /// by NIOSSL against its common name.
    static func check(_ certificate: NIOSSLCertificate, holds name: String) -> Outcome {
        var sawName = false
        var dnsNames: [String] = []
        for alternative in certificate._subjectAlternativeNames() {
            sawName = true
            guard alternative.nameType == .dnsName else { continue }
            let text = alternative.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
            if CertificateNameMatch.matches(text, name) { return .holds }
            dnsNames.append(text)
        }
        return sawName ? .doesNotHold(dnsNames) : .holds
    }
}
