/// The address of a plain DNS server: an IP literal and a port.
///
/// Text forms: `192.0.2.53`, `192.0.2.53:5353`, `2001:db8::53`, `[2001:db8::53]:5353`. The port defaults to 53.
public struct DNSServerAddress: Sendable, Hashable, CustomStringConvertible {
    public let ip: IPAddress
    public let port: UInt16

    public init(ip: IPAddress, port: UInt16 = 53) {
        self.ip = ip
        self.port = port
    }

    /// Parses `IP[:PORT]`, with brackets around an IPv6 address that carries a port.
    /// - Throws: ``DNSServerAddressError`` saying what is wrong.
    public init(parsing text: String) throws(DNSServerAddressError) {
        func invalid(_ reason: String) -> DNSServerAddressError {
            DNSServerAddressError(text: text, reason: reason)
        }
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw invalid("'[' has no matching ']'") }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw invalid("expected ':PORT' after ']'") }
                portText = rest.dropFirst()
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard let ip = IPAddress(String(host)) else {
            throw invalid("'\(host)' is not an IPv4 or IPv6 address (a DNS server is given by IP, never by name)")
        }
        var port: UInt16 = 53
        if let portText {
            guard let parsed = UInt16(portText), parsed > 0 else {
                throw invalid("'\(portText)' is not a port number from 1 to 65535")
            }
            port = parsed
        }
        self.init(ip: ip, port: port)
    }

    /// `IP:PORT`, with brackets around IPv6 addresses.
    public var description: String {
        switch ip {
        case .v4(let address): "\(address):\(port)"
        case .v6(let address): "[\(address)]:\(port)"
        }
    }
}

/// A DNS server address that failed to parse, and why.
public struct DNSServerAddressError: Error, Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public let reason: String

    public var description: String { "invalid DNS server '\(text)': \(reason)" }
}
