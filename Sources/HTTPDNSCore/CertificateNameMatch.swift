/// How a certificate's DNS name is matched against the host a connection was made for, by every check of ours
/// that a certificate holds the name (the interceptor's, gRPC's, the NIO adapter's): NIOSSL alone also accepts a
/// certificate whose IP address SAN is the address connected to, which proves nothing about a name that came from a
/// resolver.
package enum CertificateNameMatch {
    /// Whether the DNS name `pattern` of a certificate covers `host`: compared byte by byte, ASCII letters without
    /// case, a trailing dot ignored; a name with any byte outside letters, digits, `-` and `.` (beyond a leading
    /// `*.`) matches nothing, and a `*` never stands for an `xn--` label (RFC 6125 §6.4.3).
    package static func matches(_ pattern: String, _ host: String) -> Bool {
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
