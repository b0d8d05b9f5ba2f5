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
    /// The key a library reads this setting under, through its `init(configReader:)`, within the section the
    /// command gives that library: `cache.minTTLSeconds` for `cacheMinTTLSeconds`. Nil for a setting only the
    /// command itself reads (`listen`, `logLevel`).
    public let libraryKey: String?

    public init(
        _ key: String,
        _ kind: SettingKind,
        flag: String? = nil,
        environmentVariable: String? = nil,
        isSecret: Bool = false,
        libraryKey: String? = nil
    ) {
        self.key = key
        self.kind = kind
        self.flag = flag
        self.environmentVariable = environmentVariable ?? "HTTPDNS_" + Self.upperSnakeCase(key)
        self.isSecret = isSecret
        self.libraryKey = libraryKey
    }

    /// How the setting is named in an error: its flag, its key and its variable (`--budget-ms (budgetMs,
    /// HTTPDNS_BUDGET_MS)`), or its key and variable when it has no flag.
    public var names: String {
        if let flag { return "\(flag) (\(key), \(environmentVariable))" }
        return "\(key) (\(environmentVariable))"
    }

    /// The settings by the key a user writes and by the key a library reads.
    static func lookupTable(_ settings: [Setting]) -> [String: Setting] {
        var table: [String: Setting] = [:]
        for setting in settings {
            table[setting.key] = setting
            if let libraryKey = setting.libraryKey { table[libraryKey] = setting }
        }
        return table
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
///
/// Compare errors by ``code``; the ``description`` is for people and may change. The error underneath (a file that
/// could not be read, a library's `ConfigurationError`) is kept as ``cause``.
public struct SettingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the kind of problem. A struct, not an enum, so that codes can be added
    /// without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case invalidValue = "invalid_value"
            case inconsistent
            case unknownKey = "unknown_key"
            case unreadableFile = "unreadable_file"
            case invalidFile = "invalid_file"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A value the setting cannot take: of the wrong kind, out of range, not a host name. What
        /// ``SettingError/init(_:)`` gives.
        public static let invalidValue = Code(.invalidValue)
        /// Settings that cannot be used together, or one that needs another that is not set (`--fallback` without
        /// `--source auto`).
        public static let inconsistent = Code(.inconsistent)
        /// A key the configuration file, or an account in it, does not know.
        public static let unknownKey = Code(.unknownKey)
        /// A file a setting names (the configuration file, the accounts file, a TLS file) cannot be read.
        public static let unreadableFile = Code(.unreadableFile)
        /// A file that was read but does not hold what it should: not JSON, or not a JSON object.
        public static let invalidFile = Code(.invalidFile)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`unknown_key`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What kind of problem this is.
    public let code: Code
    /// What is wrong, naming the setting as a user names it and where its value came from; the command line prints
    /// it.
    public let description: String
    /// The error underneath, when there is one: why a file could not be read, a library's `ConfigurationError`.
    /// Not compared or hashed: two errors are the same when their code and description are.
    public let cause: (any Error)?

    /// An error of code ``Code/invalidValue``, with no cause.
    /// - Parameter description: what is wrong, naming the setting.
    public init(_ description: String) {
        self.init(.invalidValue, description)
    }

    /// - Parameters:
    ///   - code: what kind of problem this is.
    ///   - description: what is wrong, naming the setting.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, _ description: String, cause: (any Error)? = nil) {
        self.code = code
        self.description = description
        self.cause = cause
    }

    /// An error about the value from `origin`: `origin problem`.
    init(_ origin: SettingOrigin, _ problem: String) {
        self.init(.invalidValue, origin, problem)
    }

    /// An error about the value from `origin`, of `code`: `origin problem`.
    init(_ code: Code, _ origin: SettingOrigin, _ problem: String, cause: (any Error)? = nil) {
        self.init(code, "\(origin) \(problem)", cause: cause)
    }

    public static func == (lhs: SettingError, rhs: SettingError) -> Bool {
        lhs.code == rhs.code && lhs.description == rhs.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(description)
    }
}
