import Configuration

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
            throw SettingError("\(setting.key): \(error)")
        }
    }
}
