import NIOCore
import NIOSSL

/// The certificate of a connection made to a resolved address must hold the original host as a DNS name.
///
/// NIOSSL's own check accepts a certificate whose IP address SAN is the address connected to, even when a host name
/// was asked. For the interceptor that is not enough: the address came from a resolver, perhaps a lying one, and a
/// certificate for an address proves nothing about the name. So each new connection is checked once more, after
/// NIOSSL's check has passed: a certificate with subject alternative names must hold a DNS name that matches the
/// host (exactly, or a `*` first label standing for exactly one label). A certificate without any (its common name,
/// which NIOSSL checked against the host) passes.
struct HostCertificateMismatch: Error, CustomStringConvertible {
    let host: String
    let names: [String]

    var description: String {
        "it does not hold \(host) as a DNS name (only \(names.isEmpty ? "addresses" : names.joined(separator: ", ")))"
    }

    /// Checks the certificate of a connection AsyncHTTPClient has just set up, and closes the connection when it
    /// fails: AsyncHTTPClient hands a connection to its pool only once this succeeds.
    static func check(_ channel: any Channel, host: String) -> EventLoopFuture<Void> {
        channel.nioSSL_peerCertificate().flatMapThrowing { certificate in
            // Plain http has no certificate to check.
            guard let certificate else { return }
            var sawName = false
            var dnsNames: [String] = []
            for name in certificate._subjectAlternativeNames() {
                sawName = true
                guard name.nameType == .dnsName else { continue }
                let text = name.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
                if matches(text, host) { return }
                dnsNames.append(text)
            }
            guard sawName else { return }
            throw HostCertificateMismatch(host: host, names: dnsNames)
        }.flatMapError { error in
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    /// Whether the DNS name `pattern` of a certificate covers `host` (both compared without case and trailing dot).
    static func matches(_ pattern: String, _ host: String) -> Bool {
        func normal(_ name: String) -> Substring {
            let lower = Substring(name.lowercased())
            return lower.hasSuffix(".") ? lower.dropLast() : lower
        }
        let (pattern, host) = (normal(pattern), normal(host))
        guard pattern.hasPrefix("*.") else { return pattern == host }
        let base = pattern.dropFirst(2)
        // `*` is one whole label, and never matches a name of the base alone or of two labels more.
        guard let dot = host.firstIndex(of: "."), dot != host.startIndex else { return false }
        return host[host.index(after: dot)...] == base && base.contains(".")
    }
}
