import Configuration
import HTTPDNSCore

/// A command's settings from three places, each overriding the one before, key by key: a JSON file, the
/// `HTTPDNS_…` environment variables, and command-line flags. One swift-configuration `ConfigReader` over one
/// provider for each, in that precedence.
///
/// Every value is checked where it is read, as its ``SettingKind`` says, so an error names the file and key, the
/// variable or the flag it came from. A value that a later place overrides is never read, so it cannot stop
/// start-up.
public struct SettingsReader: Sendable {
    /// The largest file a setting may name (the configuration file, the accounts file): 1 MiB. Either must be a
    /// regular file, so a FIFO or /dev/zero is refused at once (`BoundedFile`).
    static let maxFileBytes = 1 << 20

    private let reader: ConfigReader
    private let settings: [Setting]

    /// - Parameters:
    ///   - settings: the command's table.
    ///   - file: the JSON configuration file, if one was named.
    ///   - environment: the process's environment.
    ///   - flags: the texts given on the command line, by setting key.
    /// - Throws: ``SettingError`` when the file cannot be read, is not a JSON object, or has an unknown key.
    public init(settings: [Setting], file: String?, environment: [String: String], flags: [String: [String]]) throws(SettingError) {
        var providers: [any ConfigProvider] = [
            FlagSettingsProvider(values: flags, settings: settings),
            EnvironmentSettingsProvider(environment: environment, settings: settings),
        ]
        if let file { providers.append(try FileSettingsProvider(path: file, settings: settings)) }
        reader = ConfigReader(providers: providers)
        self.settings = settings
    }

    /// A library's configuration, read by the library itself (its `init(configReader:)`) from the section
    /// `scope` of these settings: the keys whose ``Setting/libraryKey`` starts with `scope.`. A value that cannot be
    /// read is reported where it came from; a library's own error is reported under the setting's names.
    /// - Parameters:
    ///   - scope: the library's section, such as `cache`.
    ///   - make: the library's initialiser, given the scoped reader.
    public func library<Configuration>(
        _ scope: String,
        _ make: (ConfigReader) async throws(ConfigurationError) -> Configuration
    ) async throws(SettingError) -> Configuration {
        do {
            return try await make(reader.scoped(to: ConfigKey(scope)))
        } catch {
            if let cause = error.cause as? SettingError { throw cause }
            throw SettingError(error.code == .inconsistent ? .inconsistent : .invalidValue, inUsersNames(error, scope: scope), cause: error)
        }
    }

    /// A library's error with the setting it is about written as a user names it (flag, key and variable), and every
    /// other library key its reason names as the flag, or the key where there is no flag.
    func inUsersNames(_ error: ConfigurationError, scope: String) -> String {
        var reason = error.reason
        for setting in settings {
            guard let libraryKey = setting.libraryKey, libraryKey.hasPrefix(scope + ".") else { continue }
            let key = String(libraryKey.dropFirst(scope.count + 1))
            // Only camel-case keys: a plain word such as `tries` may also be prose.
            if key.contains(where: \.isUppercase), let pattern = try? Regex("\\b\(key)\\b") {
                reason = reason.replacing(pattern, with: setting.flag ?? setting.key)
            }
        }
        let setting = settings.first { $0.libraryKey == "\(scope).\(error.key)" }
        return "\(setting?.names ?? error.key) \(reason)"
    }

    public func string(_ setting: Setting) async throws(SettingError) -> String? {
        try await read(setting) { try await reader.fetchString(forKey: ConfigKey([setting.key]), isSecret: setting.isSecret) }
    }

    public func strings(_ setting: Setting) async throws(SettingError) -> [String]? {
        try await read(setting) { try await reader.fetchStringArray(forKey: ConfigKey([setting.key]), isSecret: setting.isSecret) }
    }

    public func int(_ setting: Setting) async throws(SettingError) -> Int? {
        try await read(setting) { try await reader.fetchInt(forKey: ConfigKey([setting.key]), isSecret: setting.isSecret) }
    }

    public func double(_ setting: Setting) async throws(SettingError) -> Double? {
        try await read(setting) { try await reader.fetchDouble(forKey: ConfigKey([setting.key]), isSecret: setting.isSecret) }
    }

    public func bool(_ setting: Setting) async throws(SettingError) -> Bool? {
        try await read(setting) { try await reader.fetchBool(forKey: ConfigKey([setting.key]), isSecret: setting.isSecret) }
    }

    /// Whether any place sets `setting`: its value read as its kind says, and so checked.
    public func isSet(_ setting: Setting) async throws(SettingError) -> Bool {
        switch setting.kind {
        case .flag: try await bool(setting) != nil
        case .positiveInteger, .seconds: try await int(setting) != nil
        case .nonNegativeNumber: try await double(setting) != nil
        case .accounts: try await accounts(setting) != nil
        case let kind where kind.isList: try await strings(setting) != nil
        default: try await string(setting) != nil
        }
    }

    /// Whether any place gives `setting` a value that says something: set, and for a list, not empty (an empty
    /// `HTTPDNS_SERVERS=` names no server, as leaving it out does).
    public func isGiven(_ setting: Setting) async throws(SettingError) -> Bool {
        guard setting.kind.isList else { return try await isSet(setting) }
        return try await strings(setting)?.isEmpty == false
    }

    /// The accounts of an ``SettingKind/accounts`` setting, by id.
    public func accounts(_ setting: Setting) async throws(SettingError) -> [String: SettingKind.Account]? {
        let bytes = try await read(setting) { try await reader.fetchBytes(forKey: ConfigKey([setting.key]), isSecret: true) }
        return bytes.map(SettingKind.decodeAccounts)
    }

    /// Runs one read, passing on a provider's ``SettingError`` and naming the setting in any other error.
    private func read<Value>(_ setting: Setting, _ body: () async throws -> Value?) async throws(SettingError) -> Value? {
        do {
            return try await body()
        } catch let error as SettingError {
            throw error
        } catch {
            throw SettingError(.invalidValue, "\(setting.key): \(error)", cause: error)
        }
    }
}
