import HTTPDNSCore

/// Where an HTTPDNS service is reached: a URL whose host is an IP literal, so that reaching it needs no DNS
/// (docs/WIRE-FORMATS.md §4): `https://192.0.2.53`, `https://[2001:db8::53]:8443/dns-query`.
///
/// HTTPS is the default and the rule. Plain `http://` is taken only when written out, and the client logs it as
/// insecure; nothing ever falls back from one to the other.
public struct ServiceEndpoint: Sendable, Hashable, CustomStringConvertible {
    public enum Scheme: String, Sendable, Hashable {
        case https, http
    }

    public let scheme: Scheme
    public let address: IPAddress
    public let port: Int
    /// The path the URL named, without a trailing slash (empty for none): where the DoH client asks, say.
    public let path: String

    /// Parses `https://IP[:PORT][/PATH]` (IPv6 in brackets) or `http://…`.
    /// - Throws: ``ServiceEndpointError`` saying what is wrong: a name instead of an IP, another scheme, a bad port,
    ///   a query or fragment.
    public init(parsing text: String) throws(ServiceEndpointError) {
        func fail(_ reason: String) -> ServiceEndpointError { ServiceEndpointError(text: text, reason: reason) }
        let scheme: Scheme
        let rest: Substring
        if text.hasPrefix("https://") {
            scheme = .https
            rest = text.dropFirst("https://".count)
        } else if text.hasPrefix("http://") {
            scheme = .http
            rest = text.dropFirst("http://".count)
        } else {
            throw fail("must start with https:// (or, written out, http://)")
        }
        guard !rest.contains("?"), !rest.contains("#") else { throw fail("must not have a query or a fragment") }
        let authority = rest.prefix { $0 != "/" }
        var path = String(rest.dropFirst(authority.count))
        while path.hasSuffix("/") { path.removeLast() }
        // RFC 3986 path characters only, so the URL needs no escaping (and means what it says).
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/!$&'()*+,;=:@".utf8)
        guard path.utf8.allSatisfy(allowed.contains) else { throw fail("the path '\(path)' holds characters a URL path must escape") }
        let hostText: Substring
        let portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw fail("an IPv6 address needs its closing ]") }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw fail("only :PORT may follow an IPv6 address") }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else if let colon = authority.firstIndex(of: ":") {
            hostText = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            hostText = authority
            portText = nil
        }
        guard let address = IPAddress(String(hostText)) else {
            throw fail("'\(hostText)' is not an IP address: a service is addressed by IP, so that reaching it needs no DNS")
        }
        if case .v6 = address, !authority.hasPrefix("[") { throw fail("an IPv6 address goes in brackets: https://[\(hostText)]") }
        let port: Int
        if let portText {
            guard let number = Int(portText), (1...65_535).contains(number) else { throw fail("'\(portText)' is not a port (1 to 65535)") }
            port = number
        } else {
            port = scheme == .https ? 443 : 80
        }
        self.scheme = scheme
        self.address = address
        self.port = port
        self.path = path
    }

    /// The address as a URL host: IPv6 in brackets.
    public var urlHost: String {
        switch address {
        case .v4(let v4): v4.description
        case .v6(let v6): "[\(v6)]"
        }
    }

    public var description: String {
        let defaultPort = scheme == .https ? 443 : 80
        return "\(scheme.rawValue)://\(urlHost)\(port == defaultPort ? "" : ":\(port)")\(path)"
    }
}

/// A service URL that cannot be used, and why.
public struct ServiceEndpointError: Error, Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public let reason: String

    public var description: String { "invalid service URL '\(text)': \(reason)" }
}
