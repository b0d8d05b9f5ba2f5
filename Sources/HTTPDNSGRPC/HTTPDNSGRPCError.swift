#if GRPC
/// Why a gRPC channel that resolves through HTTPDNS could not reach its host: the host could not be resolved, or a
/// server's certificate was refused.
///
/// The channel hands it to the calls it fails as the `cause` of grpc-swift's `RPCError` (itself perhaps the cause of
/// another `RPCError`): walk the causes to find it. Compare errors by ``code``; the ``reason`` is for people and may
/// change.
public struct HTTPDNSGRPCError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier of what went wrong (usable as a metric dimension). A struct, not an enum, so
    /// that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case resolutionFailed = "resolution_failed"
            case certificateRejected = "certificate_rejected"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The host could not be resolved through the `HostResolver` (its `ResolutionError` is the cause), and the
        /// channel had no addresses from an earlier answer to go on with.
        public static let resolutionFailed = Code(.resolutionFailed)
        /// A server's certificate was refused: it does not hold the host as a DNS name (one valid only for the
        /// address connected to, through an IP address SAN, or for another name), or it did not verify (TLS's error
        /// is the cause). The connection was closed before any call was sent on it.
        public static let certificateRejected = Code(.certificateRejected)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`certificate_rejected`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// The host the channel was made for.
    public let host: String
    /// The address connected to (`127.0.0.1:443`, `[::1]:443`), for a certificate refused; nil when there was none.
    public let address: String?
    /// What was wrong, in a sentence fragment.
    public let reason: String
    /// The error underneath: the resolver's `ResolutionError`, TLS's error. Not compared or hashed: two errors are
    /// the same when their code, host, address and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: what went wrong.
    ///   - host: the host the channel was made for.
    ///   - address: the address connected to, when there was one.
    ///   - reason: what was wrong, in a sentence fragment.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, host: String, address: String? = nil, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.host = host
        self.address = address
        self.reason = reason
        self.cause = cause
    }

    public var description: String {
        if code == .certificateRejected {
            return "the certificate of \(host)\(address.map { " at \($0)" } ?? "") was refused: \(reason)"
        }
        return "\(host) could not be resolved through HTTPDNS: \(reason)"
    }

    public static func == (lhs: HTTPDNSGRPCError, rhs: HTTPDNSGRPCError) -> Bool {
        lhs.code == rhs.code && lhs.host == rhs.host && lhs.address == rhs.address && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(host)
        hasher.combine(address)
        hasher.combine(reason)
    }
}
#endif
