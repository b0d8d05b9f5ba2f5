/// Why a name could not be resolved.
///
/// Compare errors by ``code``; the ``message`` is for people and may change.
public struct ResolutionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the kind of failure (usable as a metric dimension).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case nameNotFound, noAddress, timeout, refused, serverFailure, serverUnreachable
            case malformedAnswer, certificateRejected, rejectedByGuard, badName, noFamilies, tooManyPendingQueries, shutdown, internalError
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// NXDOMAIN: the name does not exist.
        public static let nameNotFound = Code(.nameNotFound)
        /// The name exists but has no address of the requested family (NOERROR, no data).
        public static let noAddress = Code(.noAddress)
        /// No answer arrived within the timeout and tries.
        public static let timeout = Code(.timeout)
        /// The server answered REFUSED.
        public static let refused = Code(.refused)
        /// The server answered SERVFAIL.
        public static let serverFailure = Code(.serverFailure)
        /// The server could not be reached (connection refused, network unreachable).
        public static let serverUnreachable = Code(.serverUnreachable)
        /// The answer could not be parsed or did not fit the question.
        public static let malformedAnswer = Code(.malformedAnswer)
        /// An HTTPS service's TLS certificate was not accepted for the name or address asked.
        public static let certificateRejected = Code(.certificateRejected)
        /// The local resolver's answer was refused by the hijack guard (a private address for a public name, a
        /// rewritten NXDOMAIN).
        public static let rejectedByGuard = Code(.rejectedByGuard)
        /// The name is not a valid host name.
        public static let badName = Code(.badName)
        /// The lookup asked for no address family at all: a mistake of the caller's.
        public static let noFamilies = Code(.noFamilies)
        /// Too many different names are being looked up upstream at once.
        public static let tooManyPendingQueries = Code(.tooManyPendingQueries)
        /// The resolver was shut down.
        public static let shutdown = Code(.shutdown)
        /// A failure inside the library or the system (out of memory, a C library error).
        public static let internalError = Code(.internalError)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = [
            .nameNotFound, .noAddress, .timeout, .refused, .serverFailure, .serverUnreachable,
            .malformedAnswer, .certificateRejected, .rejectedByGuard, .badName, .noFamilies, .tooManyPendingQueries, .shutdown, .internalError,
        ]

        /// The code as a short camel-case word: `nameNotFound`, `timeout`, …
        public var description: String { base.rawValue }

        /// Whether the error is an answer about the name (it does not exist, or has no address of the family)
        /// rather than a failure to get an answer.
        public var isNegativeAnswer: Bool { base == .nameNotFound || base == .noAddress }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong, naming the server asked where there is one.
    public let message: String
    /// For negative answers: how many seconds the answer may still be cached.
    public let ttlSeconds: UInt32?
    /// For ``Code/rejectedByGuard``: the hijack guard's verdict on the answer it refused.
    public let verdict: HijackVerdict?

    /// The error underneath, when there is one (a TLS or connection error of an HTTPS source, a c-ares status).
    /// Not compared or hashed: two errors are the same when everything else is.
    public let cause: (any Error)?

    public init(_ code: Code, _ message: String, ttlSeconds: UInt32? = nil, verdict: HijackVerdict? = nil, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.ttlSeconds = ttlSeconds
        self.verdict = verdict
        self.cause = cause
    }

    public var description: String { message }

    public static func == (lhs: ResolutionError, rhs: ResolutionError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.ttlSeconds == rhs.ttlSeconds && lhs.verdict == rhs.verdict
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(ttlSeconds)
        hasher.combine(verdict)
    }

    /// The error for a lookup of `host` that asks for no address family.
    package static func noFamilies(_ host: HostName) -> ResolutionError {
        ResolutionError(.noFamilies, "the lookup of \(host) asks for no address family: ask for A, AAAA or both")
    }
}
