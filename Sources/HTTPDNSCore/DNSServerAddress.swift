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
        func invalid(_ code: DNSServerAddressError.Code, _ reason: String) -> DNSServerAddressError {
            DNSServerAddressError(code, text: text, reason: reason)
        }
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw invalid(.invalidAddress, "'[' has no matching ']'") }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw invalid(.invalidPort, "expected ':PORT' after ']'") }
                portText = rest.dropFirst()
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard let ip = IPAddress(String(host)) else {
            throw invalid(.invalidAddress, "'\(host)' is not an IPv4 or IPv6 address (a DNS server is given by IP, never by name)")
        }
        var port: UInt16 = 53
        if let portText {
            guard let parsed = UInt16(portText), parsed > 0 else {
                throw invalid(.invalidPort, "'\(portText)' is not a port number from 1 to 65535")
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
///
/// Compare errors by ``code``; the ``reason`` is for people and may change.
public struct DNSServerAddressError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the part of the text that is wrong. A struct, not an enum, so that codes
    /// can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case invalidAddress = "invalid_address"
            case invalidPort = "invalid_port"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The address is not an IPv4 or IPv6 literal (a name, say: a DNS server is given by IP), or an IPv6
        /// address's `[` has no `]`.
        public static let invalidAddress = Code(.invalidAddress)
        /// The port is not a number from 1 to 65535, or something other than `:PORT` follows `]`.
        public static let invalidPort = Code(.invalidPort)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`invalid_port`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// Which part of the text is wrong.
    public let code: Code
    /// The text as it was given.
    public let text: String
    /// What is wrong with it, in a sentence fragment.
    public let reason: String
    /// The error underneath, when there is one (parsing itself has none). Not compared or hashed: two errors are
    /// the same when their code, text and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: which part of the text is wrong.
    ///   - text: the text as it was given.
    ///   - reason: what is wrong with it, in a sentence fragment.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, text: String, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.text = text
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "invalid DNS server '\(text)': \(reason)" }

    public static func == (lhs: DNSServerAddressError, rhs: DNSServerAddressError) -> Bool {
        lhs.code == rhs.code && lhs.text == rhs.text && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(text)
        hasher.combine(reason)
    }
}
