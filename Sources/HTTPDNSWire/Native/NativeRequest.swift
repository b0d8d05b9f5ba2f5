import HTTPDNSCore

/// A request of the native API (docs/WIRE-FORMATS.md §1): `/d` for one host, `/resolve` for several, unsigned or
/// signed for an account.
public struct NativeRequest: Sendable, Hashable {
    /// An account to ask as, and how to sign.
    public struct Account: Sendable, Hashable {
        public var id: String
        /// The shared secret, or nil for an account that takes unsigned requests.
        public var secret: String?
        public var scheme: RequestSignature.Scheme
        /// How far ahead of now a signature expires, in the whole seconds of its `t` (a fraction is dropped).
        /// Default 300 s (services allow up to 600 by default).
        public var validity: Duration

        public init(id: String, secret: String?, scheme: RequestSignature.Scheme = .hmacSHA256, validity: Duration = .seconds(300)) {
            self.id = id
            self.secret = secret
            self.scheme = scheme
            self.validity = validity
        }
    }

    /// One host asks `/d`; more ask `/resolve`.
    public var hosts: [HostName]
    public var families: AddressFamilies
    public var account: Account?

    public init(hosts: [HostName], families: AddressFamilies = .ipv4, account: Account? = nil) {
        self.hosts = hosts
        self.families = families
        self.account = account
    }

    /// The request target (path and query). Host names and the other values need no percent-encoding: names are
    /// letters, digits, hyphens and dots, and signatures hexadecimal.
    /// - Parameter unixSeconds: now, for a signature's expiry.
    public func target(unixSeconds: Int64) -> String {
        let endpoint = hosts.count == 1 ? "d" : "resolve"
        let hostList = hosts.map(\.value).joined(separator: ",")
        var target: String
        switch account {
        case nil: target = "/\(endpoint)?host=\(hostList)"
        case let account? where account.secret == nil: target = "/\(account.id)/\(endpoint)?host=\(hostList)"
        case let account?: target = "/\(account.id)/sign_\(endpoint)?host=\(hostList)"
        }
        if families != .ipv4 { target += "&query=\(families.nativeQueryValue)" }
        if let account, let secret = account.secret {
            let expiry = String(unixSeconds + account.validity.components.seconds)
            target += "&t=\(expiry)&s=\(RequestSignature.sign(host: hostList, expiry: expiry, secret: secret, scheme: account.scheme))"
        }
        return target
    }
}

extension AddressFamilies {
    /// The native API's `query` parameter: `4` (also when absent), `6`, or `4,6` in either order; nil for
    /// anything else.
    public init?(nativeQuery value: Substring?) {
        guard let value else {
            self = .ipv4
            return
        }
        var families: AddressFamilies = []
        for part in value.split(separator: ",", omittingEmptySubsequences: false) {
            switch part {
            case "4": families.insert(.ipv4)
            case "6": families.insert(.ipv6)
            default: return nil
            }
        }
        guard !families.isEmpty else { return nil }
        self = families
    }

    /// The value of the native API's `query` parameter for these families.
    public var nativeQueryValue: String {
        switch self {
        case .ipv6: "6"
        case .all: "4,6"
        default: "4"
        }
    }
}
