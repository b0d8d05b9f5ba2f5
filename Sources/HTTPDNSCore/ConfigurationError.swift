/// A setting a library was given that it cannot work with: which one, the value, and why.
///
/// Libraries throw this from their initialisers and `validate()` methods instead of stopping the process, so a
/// backend that links them, or the command line, can report the setting by name and carry on or exit cleanly.
///
/// Compare errors by ``code`` and ``key``; the ``reason`` is for people and may change. The error underneath (a
/// file that could not be read, a provider's error) is kept as ``cause``.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the kind of problem (usable as a metric dimension). A struct, not an enum,
    /// so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case invalidValue = "invalid_value"
            case outOfRange = "out_of_range"
            case inconsistent
            case unreadable
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The value is not of a form the setting takes (not a host name, not `ADDRESS/PREFIX`, empty), or is one
        /// the library refuses. What ``init(key:reason:)`` gives.
        public static let invalidValue = Code(.invalidValue)
        /// A number or duration outside the range the setting allows (a timeout of 0, a port above 65535).
        public static let outOfRange = Code(.outOfRange)
        /// Two settings that disagree: a minimum above its maximum, a private key without its certificate, pins
        /// with a plain-HTTP service.
        public static let inconsistent = Code(.inconsistent)
        /// A file the setting names cannot be read or does not hold what it should (a CA certificate file that is
        /// missing or not PEM). The error underneath is the ``ConfigurationError/cause``.
        public static let unreadable = Code(.unreadable)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`out_of_range`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What kind of problem this is.
    public var code: Code
    /// The setting, named as the type that holds it names it (`minTTL`, `timeout`).
    public var key: String
    /// What is wrong with it and what would be accepted: `(600 s) is larger than the largest TTL kept, maxTTL (60 s)`.
    public var reason: String
    /// The error underneath, when there is one: why a file the setting names could not be read, or a
    /// configuration provider's own error. Not compared or hashed: two errors are the same when their code, key
    /// and reason are.
    public var cause: (any Error)?

    /// An error of code ``Code/invalidValue``, with no cause.
    /// - Parameters:
    ///   - key: the setting, as the type that holds it names it.
    ///   - reason: what is wrong with it and what would be accepted.
    public init(key: String, reason: String) {
        self.init(.invalidValue, key: key, reason: reason)
    }

    /// - Parameters:
    ///   - code: what kind of problem this is.
    ///   - key: the setting, as the type that holds it names it.
    ///   - reason: what is wrong with it and what would be accepted.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, key: String, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.key = key
        self.reason = reason
        self.cause = cause
    }

    /// `key reason`, for example `timeout must be at least 1 ms, not 0.0 seconds`.
    public var description: String { "\(key) \(reason)" }

    public static func == (lhs: ConfigurationError, rhs: ConfigurationError) -> Bool {
        lhs.code == rhs.code && lhs.key == rhs.key && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(key)
        hasher.combine(reason)
    }
}
