/// A setting a library was given that it cannot work with: which one, the value, and why.
///
/// Libraries throw this from their initialisers and `validate()` methods instead of stopping the process, so a
/// backend that links them, or the command line, can report the setting by name and carry on or exit cleanly.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The setting, named as the type that holds it names it (`minTTL`, `timeout`).
    public var key: String
    /// What is wrong with it and what would be accepted: `(600 s) is larger than the largest TTL kept, maxTTL (60 s)`.
    public var reason: String

    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }

    /// `key reason`, for example `timeout must be at least 1 ms, not 0.0 seconds`.
    public var description: String { "\(key) \(reason)" }
}
