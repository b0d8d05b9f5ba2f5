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

    /// Checks the certificate of a connection AsyncHTTPClient has just set up, and closes the connection when it
    /// fails: AsyncHTTPClient hands a connection to its pool only once this succeeds.
    ///
    /// Synchronous on the channel's event loop (AsyncHTTPClient calls it there): the connection is judged before
    /// anything else can happen on it, which its pool relies on when the check fails.
    static func check(_ channel: any Channel, host: String) -> EventLoopFuture<Void> {
        do {
            // Plain http: no TLS handler, nothing to check.
            guard let tls = try? channel.pipeline.syncOperations.handler(type: NIOSSLHandler.self) else {
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            guard let certificate = tls.peerCertificate else { throw HostCertificateMismatch(host: host, names: []) }
            try verify(certificate, host: host)
            return channel.eventLoop.makeSucceededVoidFuture()
        } catch {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    private static func verify(_ certificate: NIOSSLCertificate, host: String) throws {
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
    }

    /// Whether the DNS name `pattern` of a certificate covers `host`: compared byte by byte, ASCII letters without
    /// case, a trailing dot ignored; a name with any byte outside letters, digits, `-` and `.` (beyond a leading
    /// `*.`) matches nothing, and a `*` never stands for an `xn--` label (RFC 6125 §6.4.3).
    static func matches(_ pattern: String, _ host: String) -> Bool {
        func normal(_ name: String) -> [UInt8]? {
            var bytes = Array(name.utf8)
            if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
            for index in bytes.indices {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): bytes[index] = byte | 0x20
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."): break
                case UInt8(ascii: "*") where index == 0: break
                default: return nil
                }
            }
            return bytes
        }
        guard let pattern = normal(pattern), let host = normal(host), !host.contains(UInt8(ascii: "*")) else { return false }
        guard pattern.starts(with: Array("*.".utf8)) else { return pattern == host }
        let base = pattern.dropFirst(2)
        // `*` is one whole label, and never matches a name of the base alone or of two labels more.
        guard let dot = host.firstIndex(of: UInt8(ascii: ".")), dot != host.startIndex, base.contains(UInt8(ascii: ".")) else { return false }
        let label = host[..<dot]
        if label.starts(with: Array("xn--".utf8)) { return false }
        return host[(dot + 1)...].elementsEqual(base)
    }
}
