import HTTPDNSCore
import NIOSSL

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
    /// A connection with no request in progress is closed after this long, so idle or slow clients cannot hold
    /// every descriptor. Default 60 s.
    public var idleTimeout: Duration = .seconds(60)
    /// A request head (HTTP/1.1), a header block or the client's preface (HTTP/2), and the TLS handshake must each
    /// be complete within this long of their first byte; past it the connection closes (HTTP/1.1 with 408). The
    /// idle timeout, when shorter, is used instead. Default 10 s.
    public var headerTimeout: Duration = .seconds(10)
    /// Connections open at once; past it the service stops accepting until one closes. Keep it under the process's
    /// descriptor limit (`ulimit -n`). Default 1,024.
    public var maxConnections: Int = 1024
    /// Request body bytes the service holds at once over every HTTP/2 connection (unfinished DoH POST bodies and
    /// bodies being answered); a stream past it is refused with REFUSED_STREAM. Default 16 MiB.
    public var maxRequestBodyBytesHeld: Int = 16 << 20
    /// HTTP/2 streams open at once over every connection (requests being read, or answered by the router until its
    /// work ends; a cache hit answered as it is read takes none); a stream past it is refused with REFUSED_STREAM.
    /// Default 5,000.
    public var maxOpenStreams: Int = 5_000
    /// The `Retry-After` sent with 503 UpstreamUnavailable, in whole seconds (a fraction is rounded up).
    /// Default 5 s.
    public var upstreamRetryAfter: Duration = .seconds(5)

    /// Accounts for the `/{account}/…` endpoints, by account id.
    public var accounts: [String: Account] = [:]
    /// How far in the future a signed request's expiry `t` may be: whole seconds (a fraction is dropped), at least
    /// one. Default 600 s.
    public var signatureMaxValidity: Duration = .seconds(600)

    /// The name `/readyz` resolves through the upstream (bypassing the cache) to prove an upstream answers. Any
    /// answer, NXDOMAIN included, counts. Default `readyz.invalid` (RFC 6761: always NXDOMAIN, never leaks).
    public var readinessProbeName: String = "readyz.invalid"

    public init() {}

    /// Checks every setting against its range and the others.
    /// - Throws: `ConfigurationError` naming the first setting that cannot work.
    public func validate() throws(ConfigurationError) {
        guard (0...65_535).contains(port) else { throw ConfigurationError(.outOfRange, key: "port", reason: "must be 0 to 65535, not \(port)") }
        guard !host.isEmpty else { throw ConfigurationError(key: "host", reason: "must not be empty") }
        if tlsCertificatePath != nil, tlsKeyPath == nil {
            throw ConfigurationError(.inconsistent, key: "tlsKeyPath", reason: "is missing: a certificate needs its private key")
        }
        if tlsKeyPath != nil, tlsCertificatePath == nil {
            throw ConfigurationError(.inconsistent, key: "tlsCertificatePath", reason: "is missing: a private key needs its certificate")
        }
        for (key, value) in [
            ("maxHostsPerBatch", maxHostsPerBatch), ("maxURLLength", maxURLLength), ("maxDNSMessageBytes", maxDNSMessageBytes),
            ("maxConnections", maxConnections), ("maxRequestBodyBytesHeld", maxRequestBodyBytesHeld), ("maxOpenStreams", maxOpenStreams),
        ] {
            guard value > 0 else { throw ConfigurationError(.outOfRange, key: key, reason: "must be a positive whole number, not \(value)") }
        }
        guard maxDNSMessageBytes <= 65_535 else {
            throw ConfigurationError(
                .outOfRange,
                key: "maxDNSMessageBytes",
                reason: "must be at most 65535, the largest DNS message, not \(maxDNSMessageBytes)"
            )
        }
        guard rateLimitPerSecond >= 0, rateLimitPerSecond.isFinite else {
            throw ConfigurationError(
                .outOfRange,
                key: "rateLimitPerSecond",
                reason: "must be a number ≥ 0 (0 turns the limit off), not \(rateLimitPerSecond)"
            )
        }
        guard rateLimitPerSecond == 0 || (rateLimitBurst >= 1 && rateLimitBurst.isFinite) else {
            throw ConfigurationError(.outOfRange, key: "rateLimitBurst", reason: "must be a number ≥ 1, not \(rateLimitBurst)")
        }
        guard idleTimeout > .zero else {
            throw ConfigurationError(.outOfRange, key: "idleTimeout", reason: "must be a positive duration, not \(idleTimeout)")
        }
        guard headerTimeout > .zero else {
            throw ConfigurationError(.outOfRange, key: "headerTimeout", reason: "must be a positive duration, not \(headerTimeout)")
        }
        guard upstreamRetryAfter >= .zero else {
            throw ConfigurationError(.outOfRange, key: "upstreamRetryAfter", reason: "must be a duration ≥ 0, not \(upstreamRetryAfter)")
        }
        guard signatureMaxValidity >= .seconds(1) else {
            throw ConfigurationError(.outOfRange, key: "signatureMaxValidity", reason: "must be at least one second, not \(signatureMaxValidity)")
        }
        for (id, account) in accounts.sorted(by: { $0.key < $1.key }) {
            guard !id.isEmpty, id.utf8.allSatisfy({ $0 != UInt8(ascii: "/") && $0 > 0x20 }) else {
                throw ConfigurationError(key: "accounts", reason: "has an account id '\(id)' that is empty or holds '/' or spaces")
            }
            guard !account.secret.isEmpty else { throw ConfigurationError(key: "accounts", reason: "has an account '\(id)' with an empty secret") }
        }
        guard (try? HostName(readinessProbeName)) != nil else {
            throw ConfigurationError(key: "readinessProbeName", reason: "'\(readinessProbeName)' is not a host name")
        }
    }

    /// ``upstreamRetryAfter`` as `Retry-After` sends it: whole seconds, rounded up.
    var upstreamRetryAfterSeconds: Int { Int(upstreamRetryAfter.roundedUpSeconds) }

    /// ``signatureMaxValidity`` in the whole seconds of a request's `t`, rounded down.
    var signatureMaxValiditySeconds: Int64 { max(signatureMaxValidity.components.seconds, 0) }

    /// The TLS server configuration from the PEM files, or nil without them.
    /// - Throws: ``TLSFilesError`` naming the file that could not be used.
    public func tlsConfiguration() throws -> TLSConfiguration? {
        guard let certificatePath = tlsCertificatePath, let keyPath = tlsKeyPath else { return nil }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw TLSFilesError(.invalidCertificate, description: "tlsCert \(certificatePath) is not a PEM certificate chain: \(error)", cause: error)
        }
        guard !chain.isEmpty else { throw TLSFilesError(.invalidCertificate, description: "tlsCert \(certificatePath) holds no certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        } catch {
            throw TLSFilesError(.invalidPrivateKey, description: "tlsKey \(keyPath) is not a PEM private key: \(error)", cause: error)
        }
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        return tls
    }

    /// A certificate or key file that could not be used.
    ///
    /// Compare errors by ``code``; the ``description`` is for people and may change. The TLS library's error is
    /// kept as ``cause``.
    public struct TLSFilesError: Error, Sendable, Hashable, CustomStringConvertible {
        /// A stable, bounded identifier for the file that could not be used. A struct, not an enum, so that codes
        /// can be added without breaking a caller's `switch`.
        public struct Code: Sendable, Hashable, CustomStringConvertible {
            private enum Base: String, Sendable, Hashable, CaseIterable {
                case invalidCertificate = "invalid_certificate"
                case invalidPrivateKey = "invalid_private_key"
            }

            private let base: Base
            private init(_ base: Base) { self.base = base }

            /// The certificate file (``HTTPDNSServerConfiguration/tlsCertificatePath``) cannot be read, is not a PEM
            /// certificate chain, or holds no certificate.
            public static let invalidCertificate = Code(.invalidCertificate)
            /// The key file (``HTTPDNSServerConfiguration/tlsKeyPath``) cannot be read or is not a PEM private key.
            public static let invalidPrivateKey = Code(.invalidPrivateKey)

            /// Every code, for making one metric per code up front.
            public static let all: [Code] = Base.allCases.map(Code.init)

            /// The code as a short snake-case word (`invalid_certificate`), as metrics and logs write it.
            public var description: String { base.rawValue }
        }

        /// Which file could not be used.
        public let code: Code
        /// What went wrong, naming the setting and the file: `tlsKey /etc/httpdns/key.pem is not a PEM private key: …`.
        public let description: String
        /// The TLS library's error, when it gave one. Not compared or hashed: two errors are the same when their
        /// code and description are.
        public let cause: (any Error)?

        /// - Parameters:
        ///   - code: which file could not be used.
        ///   - description: what went wrong, naming the setting and the file.
        ///   - cause: the error underneath, when there is one.
        public init(_ code: Code, description: String, cause: (any Error)? = nil) {
            self.code = code
            self.description = description
            self.cause = cause
        }

        public static func == (lhs: TLSFilesError, rhs: TLSFilesError) -> Bool {
            lhs.code == rhs.code && lhs.description == rhs.description
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(code)
            hasher.combine(description)
        }
    }

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
