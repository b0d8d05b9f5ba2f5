/// A setting a library was given that it cannot work with: which one, the value, and why.
///
/// Libraries throw this from their initialisers and `validate()` methods instead of stopping the process, so a
/// backend that links them, or the command line, can report the setting by name and carry on or exit cleanly.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The setting, named as the type that holds it names it (`minTTLSeconds`, `timeoutMs`).
    public var key: String
    /// What is wrong with it and what would be accepted: `must be at most maxTTLSeconds (3600), not 7200`.
    public var reason: String

    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }

    /// `key reason`, for example `timeoutMs must be a positive number of milliseconds, not 0`.
    public var description: String { "\(key) \(reason)" }
}
