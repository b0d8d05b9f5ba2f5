/// A query that ``HTTPDNSNIOResolver`` answered with neither addresses nor a resolver's error: the port cannot be
/// connected to, or NIO no longer needed the answer.
///
/// A lookup that fails fails with the resolver's own error instead: `ResolutionError` (the name has no address, every
/// source failed, the guard refused the answer) or `HostNameError` (the host is not a valid name). Compare errors by
/// ``code``; the ``reason`` is for people and may change.
public struct HTTPDNSNIOResolverError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for why the query was not answered. A struct, not an enum, so that codes can be
    /// added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case invalidPort = "invalid_port"
            case cancelled
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The port is not between 0 and 65535: no address can be made with it, so nothing is looked up.
        public static let invalidPort = Code(.invalidPort)
        /// ``HTTPDNSNIOResolver/cancelQueries()`` was called while the lookup was in flight: NIO no longer needs
        /// the answer (the connection was made, or its attempt timed out).
        public static let cancelled = Code(.cancelled)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`invalid_port`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// Why the query was not answered.
    public let code: Code
    /// The host of the query, as NIO gave it.
    public let host: String
    /// What happened, in a sentence fragment.
    public let reason: String
    /// The error underneath, when there is one (neither code has one today). Not compared or hashed: two errors are
    /// the same when their code, host and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: why the query was not answered.
    ///   - host: the host of the query, as NIO gave it.
    ///   - reason: what happened, in a sentence fragment.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, host: String, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.host = host
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "no addresses for '\(host)': \(reason)" }

    public static func == (lhs: HTTPDNSNIOResolverError, rhs: HTTPDNSNIOResolverError) -> Bool {
        lhs.code == rhs.code && lhs.host == rhs.host && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(host)
        hasher.combine(reason)
    }
}
