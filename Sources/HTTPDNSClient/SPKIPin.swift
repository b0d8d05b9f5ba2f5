import Crypto
import HTTPDNSCore
import HTTPDNSNetworking
import HTTPDNSWire
import NIOCore
import NIOSSL

/// The SHA-256 of a certificate's SubjectPublicKeyInfo, in base64: what `curl --pinnedpubkey sha256//…` and
/// HPKP's `pin-sha256` take, and what
/// `openssl x509 -pubkey -noout -in cert.pem | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`
/// prints.
///
/// With pins configured, the service's certificate must still verify as usual, and its public key must also be one
/// of the pins: a CA that signs for the service's name or address without being asked is not enough.
public struct SPKIPin: Sendable, Hashable, CustomStringConvertible {
    /// The 32 bytes of the digest.
    public let sha256: [UInt8]

    /// Reads `sha256//BASE64` or `BASE64` alone.
    /// - Throws: `ConfigurationError` (key `pin`) when the text is not the base64 of 32 bytes.
    public init(parsing text: String) throws(ConfigurationError) {
        let base64 = text.hasPrefix("sha256//") ? text.dropFirst("sha256//".count) : Substring(text)
        let urlSafe = base64.contains(where: { $0 == "-" || $0 == "_" }) ? nil : String(base64.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
        guard let urlSafe, let bytes = Base64URL.decode(Substring(urlSafe)), bytes.count == 32 else {
            throw ConfigurationError(
                key: "pin",
                reason: "'\(text)' is not an SPKI SHA-256 pin: the base64 of 32 bytes (44 characters), optionally after sha256//"
            )
        }
        sha256 = bytes
    }

    /// The pin of `certificate`'s public key.
    public init(of certificate: NIOSSLCertificate) throws {
        sha256 = Array(SHA256.hash(data: try certificate.extractPublicKey().toSPKIBytes()))
    }

    public var description: String {
        let text = Base64URL.encode(sha256).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 }
        return "sha256//" + String(text) + String(repeating: "=", count: (4 - text.count % 4) % 4)
    }
}

/// The service's public key is none of the configured pins.
struct SPKIPinMismatch: CertificateRejectionError {
    let presented: String

    var description: String { "its public key (\(presented)) is none of the configured pins" }
}
