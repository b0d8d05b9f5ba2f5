/// One setting of a command: its key in the configuration file, its environment variable, its flag, and the
/// kind of value it takes. Each is defined once, in a command's table (``ServeSettings/table``), and read from a
/// file, the environment and flags alike (``SettingsReader``).
public struct Setting: Sendable, Hashable {
    /// The key in the JSON configuration file, camel case with its unit last: `upstreamTimeoutMs`.
    public let key: String
    /// `HTTPDNS_` and the key in upper snake case (`HTTPDNS_UPSTREAM_TIMEOUT_MS`), unless the table says otherwise.
    public let environmentVariable: String
    /// The command-line flag, when the setting has one: `--listen`.
    public let flag: String?
    public let kind: SettingKind
    /// Whether the value is a secret: never logged, never echoed in an error.
    public let isSecret: Bool

    public init(_ key: String, _ kind: SettingKind, flag: String? = nil, environmentVariable: String? = nil, isSecret: Bool = false) {
        self.key = key
        self.kind = kind
        self.flag = flag
        self.environmentVariable = environmentVariable ?? "HTTPDNS_" + Self.upperSnakeCase(key)
        self.isSecret = isSecret
    }

    /// `cacheMinTTLSeconds` → `CACHE_MIN_TTL_SECONDS`: a word starts at an upper-case letter after a lower-case one or
    /// a digit, and at the last capital of a run of capitals followed by a lower-case letter (`TTLSeconds`).
    static func upperSnakeCase(_ key: String) -> String {
        let characters = Array(key)
        var result = ""
        for index in characters.indices {
            let character = characters[index]
            if index > 0, character.isUppercase {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) { result += "_" }
            }
            result += character.uppercased()
        }
        return result
    }
}

/// Where a value came from, for error messages: `/etc/httpdns.json: key 'listen'`, `environment variable
/// HTTPDNS_LISTEN`, `--listen`.
public struct SettingOrigin: Sendable, Hashable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// A setting that cannot be used: where it came from and what is wrong. The command line prints it and exits 2.
public struct SettingError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }

    init(_ origin: SettingOrigin, _ problem: String) {
        self.description = "\(origin) \(problem)"
    }
}
