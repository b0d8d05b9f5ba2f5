import Configuration
import FoundationEssentials
import HTTPDNSCore
import HTTPDNSWire

/// What the three providers of a command's settings share: the command's table, by key, and a lookup that reads a
/// value for a setting, checks it as its kind says, and hands it over typed, or throws a ``SettingError`` naming
/// where the value came from. A provider is its own snapshot: none of them changes once made.
protocol SettingsProvider: ConfigProvider, ConfigSnapshot {
    /// The command's settings by the key a user writes and by the key a library reads (``Setting/libraryKey``).
    var settings: [String: Setting] { get }
    /// The checked value of `setting`, or nil when this provider has none.
    func content(of setting: Setting) throws(SettingError) -> ConfigContent?
    /// How the key is spelt where this provider reads it.
    func encodedKey(of setting: Setting) -> String
}

extension SettingsProvider {
    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        guard let setting = settings[key.description] else { return LookupResult(encodedKey: key.description, value: nil) }
        let content = try content(of: setting)
        return LookupResult(encodedKey: encodedKey(of: setting), value: content.map { ConfigValue($0, isSecret: setting.isSecret) })
    }

    nonisolated(nonsending) func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try value(forKey: key, type: type)
    }

    nonisolated(nonsending) func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler: nonisolated(nonsending) (ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>) async throws -> Return
    ) async throws -> Return {
        try await watchValueFromValue(forKey: key, type: type, updatesHandler: updatesHandler)
    }

    func snapshot() -> any ConfigSnapshot { self }

    nonisolated(nonsending) func watchSnapshot<Return: ~Copyable>(
        updatesHandler: nonisolated(nonsending) (ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        try await watchSnapshotFromSnapshot(updatesHandler: updatesHandler)
    }
}

/// The JSON configuration file: read and parsed once, strictly (booleans are not numbers, a key given twice is an
/// error), and every key checked against the table, so a mistyped key stops start-up.
struct FileSettingsProvider: SettingsProvider {
    let settings: [String: Setting]
    let path: String
    private let object: JSONObject

    var providerName: String { "file \(path)" }

    init(path: String, settings: [Setting]) throws(SettingError) {
        let table = Dictionary(uniqueKeysWithValues: settings.map { ($0.key, $0) })
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, maxBytes: SettingsReader.maxFileBytes)
        } catch {
            throw SettingError(.unreadableFile, "cannot read the configuration file \(path): \(error)", cause: error)
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            // Where, not what: the file may hold account secrets.
            throw SettingError(.invalidFile, "the configuration file \(path) is not valid JSON: \(error.redactedDescription)")
        }
        guard case .object(let object) = value else {
            throw SettingError(.invalidFile, "the configuration file \(path) is not a JSON object but \(value.kind)")
        }
        if let unknown = object.names.first(where: { table[$0] == nil }) {
            let known = settings.map(\.key).joined(separator: ", ")
            throw SettingError(.unknownKey, "\(path): unknown key '\(unknown)' (known keys: \(known))")
        }
        self.path = path
        self.settings = Setting.lookupTable(settings)
        self.object = object
    }

    func content(of setting: Setting) throws(SettingError) -> ConfigContent? {
        guard let value = object[setting.key] else { return nil }
        return try setting.kind.read(json: value, from: SettingOrigin("\(path): key '\(setting.key)'"), isSecret: setting.isSecret)
    }

    func encodedKey(of setting: Setting) -> String { setting.key }
}

/// `HTTPDNS_…` environment variables: each setting's own variable, read as text.
struct EnvironmentSettingsProvider: SettingsProvider {
    let settings: [String: Setting]
    let environment: [String: String]

    var providerName: String { "environment" }

    init(environment: [String: String], settings: [Setting]) {
        self.environment = environment
        self.settings = Setting.lookupTable(settings)
    }

    func content(of setting: Setting) throws(SettingError) -> ConfigContent? {
        guard let text = environment[setting.environmentVariable] else { return nil }
        return try setting.kind.read(text: text, from: SettingOrigin("environment variable \(setting.environmentVariable)"), isSecret: setting.isSecret)
    }

    func encodedKey(of setting: Setting) -> String { setting.environmentVariable }
}

/// Command-line flags, as swift-argument-parser parsed them: the text given to each (several for a repeated
/// flag). A flag given no value is absent.
struct FlagSettingsProvider: SettingsProvider {
    let settings: [String: Setting]
    let values: [String: [String]]

    var providerName: String { "flags" }

    /// - Parameter values: the texts given, by setting key.
    init(values: [String: [String]], settings: [Setting]) {
        self.values = values.filter { !$0.value.isEmpty }
        self.settings = Setting.lookupTable(settings)
    }

    func content(of setting: Setting) throws(SettingError) -> ConfigContent? {
        guard let texts = values[setting.key] else { return nil }
        let origin = SettingOrigin(setting.flag ?? "the flag for \(setting.key)")
        if setting.kind.isList {
            // A repeated flag: each value one item.
            return try setting.kind.read(json: .array(texts.map(JSONValue.string)), from: origin, isSecret: setting.isSecret)
        }
        return try setting.kind.read(text: texts[texts.count - 1], from: origin, isSecret: setting.isSecret)
    }

    func encodedKey(of setting: Setting) -> String { setting.flag ?? setting.key }
}
