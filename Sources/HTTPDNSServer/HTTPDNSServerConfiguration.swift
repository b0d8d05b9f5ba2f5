import HTTPDNSCore

/// Everything the HTTPDNS service needs besides its resolver. Each default is documented in docs/SERVICE.md.
public struct HTTPDNSServerConfiguration: Sendable {
    /// Where to listen. Default 127.0.0.1:8053: never every interface unless asked.
    public var host: String = "127.0.0.1"
    public var port: Int = 8053

    /// PEM files for TLS. With both set the service speaks TLS and offers ALPN `h2` and `http/1.1`.
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?

    /// The most hosts in one batch `/resolve` request. Default 5.
    public var maxHostsPerBatch: Int = 5
    /// The longest request target (path and query) accepted; longer gets 414. Default 2,048 bytes.
    public var maxURLLength: Int = 2048
    /// The largest DoH POST body; larger gets 413 (RFC 8484 messages are at most 64 KiB). Default 65,535 bytes.
    public var maxDNSMessageBytes: Int = 65_535
    /// Requests per second each client address may make, on average; past it, 429. 0 turns the limit off.
    /// Default 100.
    public var rateLimitPerSecond: Double = 100
    /// How many requests a client may make at once above the average. Default 200.
    public var rateLimitBurst: Double = 200
    /// `Retry-After` seconds sent with 503 UpstreamUnavailable. Default 5.
    public var upstreamRetryAfterSeconds: Int = 5

    /// Accounts for the `/{account}/…` endpoints, by account id.
    public var accounts: [String: Account] = [:]
    /// How far in the future a signed request's expiry `t` may be. Default 600 s.
    public var signatureMaxValiditySeconds: Int64 = 600

    /// The name `/readyz` resolves through the upstream (bypassing the cache) to prove an upstream answers. Any
    /// answer, NXDOMAIN included, counts. Default `readyz.invalid` (RFC 6761: always NXDOMAIN, never leaks).
    public var readinessProbeName: String = "readyz.invalid"

    public init() {}

    /// One account of the native API.
    public struct Account: Sendable, Hashable {
        /// The shared secret signatures are made with. Never logged.
        public var secret: String
        /// Whether the unsigned `/{account}/d` and `/{account}/resolve` are refused (403 UnsignedInterfaceDisabled).
        public var requireSignature: Bool
        /// Whether the old `md5("<host>-<secret>-<t>")` signature is accepted too. Off by default.
        public var allowMD5Signature: Bool

        public init(secret: String, requireSignature: Bool = true, allowMD5Signature: Bool = false) {
            self.secret = secret
            self.requireSignature = requireSignature
            self.allowMD5Signature = allowMD5Signature
        }
    }
}
