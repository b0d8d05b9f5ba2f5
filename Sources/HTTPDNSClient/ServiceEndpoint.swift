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
        func fail(_ code: ServiceEndpointError.Code, _ reason: String) -> ServiceEndpointError {
            ServiceEndpointError(code, text: text, reason: reason)
        }
        let scheme: Scheme
        let rest: Substring
        if text.hasPrefix("https://") {
            scheme = .https
            rest = text.dropFirst("https://".count)
        } else if text.hasPrefix("http://") {
            scheme = .http
            rest = text.dropFirst("http://".count)
        } else {
            throw fail(.invalidScheme, "must start with https:// (or, written out, http://)")
        }
        guard !rest.contains("?"), !rest.contains("#") else { throw fail(.invalidPath, "must not have a query or a fragment") }
        let authority = rest.prefix { $0 != "/" }
        var path = String(rest.dropFirst(authority.count))
        while path.hasSuffix("/") { path.removeLast() }
        // RFC 3986 path characters only, so the URL needs no escaping (and means what it says).
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/!$&'()*+,;=:@".utf8)
        guard path.utf8.allSatisfy(allowed.contains) else { throw fail(.invalidPath, "the path '\(path)' holds characters a URL path must escape") }
        let hostText: Substring
        let portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw fail(.invalidAddress, "an IPv6 address needs its closing ]") }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw fail(.invalidPort, "only :PORT may follow an IPv6 address") }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else if authority.firstIndex(of: ":") != authority.lastIndex(of: ":") {
            // Two colons or more: an IPv6 address, which cannot be told from its port without brackets.
            throw fail(.invalidAddress, "an IPv6 address goes in brackets: https://[\(authority)]")
        } else if let colon = authority.firstIndex(of: ":") {
            hostText = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            hostText = authority
            portText = nil
        }
        guard let address = IPAddress(String(hostText)) else {
            throw fail(.invalidAddress, "'\(hostText)' is not an IP address: a service is addressed by IP, so that reaching it needs no DNS")
        }
        let port: Int
        if let portText {
            guard let number = Int(portText), (1...65_535).contains(number) else {
                throw fail(.invalidPort, "'\(portText)' is not a port (1 to 65535)")
            }
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
///
/// Compare errors by ``code``; the ``reason`` is for people and may change.
public struct ServiceEndpointError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the part of the URL that is wrong. A struct, not an enum, so that codes can
    /// be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case invalidScheme = "invalid_scheme"
            case invalidAddress = "invalid_address"
            case invalidPort = "invalid_port"
            case invalidPath = "invalid_path"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The URL does not start with `https://` (or, written out, `http://`).
        public static let invalidScheme = Code(.invalidScheme)
        /// The host is not an IP literal (a name: a service is addressed by IP, so that reaching it needs no DNS),
        /// or an IPv6 address is not in brackets or its `]` is missing.
        public static let invalidAddress = Code(.invalidAddress)
        /// The port is not a number from 1 to 65535, or something other than `:PORT` follows `]`.
        public static let invalidPort = Code(.invalidPort)
        /// The URL has a query or a fragment, or its path holds a character a URL path must escape.
        public static let invalidPath = Code(.invalidPath)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`invalid_address`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// Which part of the URL is wrong.
    public let code: Code
    /// The URL as it was given.
    public let text: String
    /// What is wrong with it, in a sentence fragment.
    public let reason: String
    /// The error underneath, when there is one (parsing itself has none). Not compared or hashed: two errors are
    /// the same when their code, text and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: which part of the URL is wrong.
    ///   - text: the URL as it was given.
    ///   - reason: what is wrong with it, in a sentence fragment.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, text: String, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.text = text
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "invalid service URL '\(text)': \(reason)" }

    public static func == (lhs: ServiceEndpointError, rhs: ServiceEndpointError) -> Bool {
        lhs.code == rhs.code && lhs.text == rhs.text && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(text)
        hasher.combine(reason)
    }
}
