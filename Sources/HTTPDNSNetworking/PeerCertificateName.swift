import HTTPDNSCore
import NIOSSL

/// Whether a peer's certificate holds a name as a DNS name: every check of ours that a certificate holds the name
/// asked (the interceptor's, gRPC's, the HTTPS sources' and DoT's with a server name) reads the certificate here.
/// NIOSSL's own check also accepts a certificate whose IP address SAN is the address connected to, whatever name was
/// asked, which proves nothing about a name. (The NIO adapter, which does not depend on this module, reads it alike.)
package enum PeerCertificateName {
    package enum Outcome: Sendable, Equatable {
        case holds
        /// What the certificate holds instead: its DNS names and its IP addresses, as text.
        case doesNotHold(dnsNames: [String], addresses: [String])

        /// `only a.example, IP 192.0.2.1` or `only addresses`, for an error's reason.
        package var held: String {
            guard case .doesNotHold(let names, let addresses) = self else { return "the name" }
            if names.isEmpty && addresses.isEmpty { return "no DNS name or address" }
            return "only " + (names + addresses.map { "IP \($0)" }).joined(separator: ", ")
        }
    }

    /// A certificate with subject alternative names must hold a DNS name matching `name` (``CertificateNameMatch``);
    /// one without any was checked by NIOSSL against its common name, and holds it.
    package static func check(_ certificate: NIOSSLCertificate, holds name: String) -> Outcome {
        var sawName = false
        var dnsNames: [String] = []
        var addresses: [String] = []
        for alternative in certificate._subjectAlternativeNames() {
            sawName = true
            let bytes = Array(alternative.contents)
            switch alternative.nameType {
            case .dnsName:
                let text = String(decoding: bytes, as: UTF8.self)
                if CertificateNameMatch.matches(text, name) { return .holds }
                dnsNames.append(text)
            case .ipAddress:
                addresses.append(describe(addressBytes: bytes))
            default:
                continue
            }
        }
        return sawName ? .doesNotHold(dnsNames: dnsNames, addresses: addresses) : .holds
    }

    /// An IP address SAN as text: 4 bytes as IPv4, 16 as IPv6, anything else in hex.
    private static func describe(addressBytes bytes: [UInt8]) -> String {
        func number(_ bytes: ArraySlice<UInt8>) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }
        switch bytes.count {
        case 4: return IPv4Address(UInt32(number(bytes[...]))).description
        case 16: return IPv6Address(high: number(bytes[0..<8]), low: number(bytes[8..<16])).description
        default: return bytes.map { String($0, radix: 16) }.joined(separator: ":")
        }
    }
}
