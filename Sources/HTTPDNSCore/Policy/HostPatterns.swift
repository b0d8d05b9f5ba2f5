/// A list of host names and domains: `api.example.com` matches that name, `.example.com` every name under it
/// (not `example.com` itself).
public struct HostPatterns: Sendable, Hashable {
    private var names: Set<String> = []
    private var suffixes: [String] = []

    public init() {}

    /// - Throws: ``ConfigurationError`` (key `hosts`) for a pattern that is not a host name or `.` and one.
    public init(_ patterns: [String]) throws(ConfigurationError) {
        for pattern in patterns {
            let isSuffix = pattern.hasPrefix(".")
            guard let name = try? HostName(isSuffix ? String(pattern.dropFirst()) : pattern) else {
                throw ConfigurationError(key: "hosts", reason: "'\(pattern)' is not a host name, or a . and one")
            }
            if isSuffix { suffixes.append("." + name.value) } else { names.insert(name.value) }
        }
    }

    public func matches(_ host: HostName) -> Bool {
        // An empty set (the usual case) answers without hashing the name.
        !names.isEmpty && names.contains(host.value) || suffixes.contains { host.value.hasSuffix($0) }
    }

    public var isEmpty: Bool { names.isEmpty && suffixes.isEmpty }
}
