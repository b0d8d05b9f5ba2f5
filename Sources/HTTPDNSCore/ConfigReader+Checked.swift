import Configuration

/// How the libraries read their own settings from a swift-configuration `ConfigReader` (each type's
/// `init(configReader:)`): one key at a time, with `fetch`, so that a value a provider holds but cannot give as the
/// type asked (`"fast"` for a number) is an error naming the key, never a silent fall back to the default. A key no
/// provider holds leaves the default in place.
///
/// Durations are read from keys that carry their unit last (`timeoutMs`, `minTTLSeconds`), as whole numbers ≥ 0.
extension ConfigReader {
    /// A string, or nil when no provider holds `key`.
    package func checkedString(_ key: String, isSecret: Bool = false) async throws(ConfigurationError) -> String? {
        try await read(key) { try await fetchString(forKey: ConfigKey(key), isSecret: isSecret) }
    }

    /// A list of strings.
    package func checkedStrings(_ key: String) async throws(ConfigurationError) -> [String]? {
        try await read(key) { try await fetchStringArray(forKey: ConfigKey(key)) }
    }

    /// A whole number.
    package func checkedInt(_ key: String) async throws(ConfigurationError) -> Int? {
        try await read(key) { try await fetchInt(forKey: ConfigKey(key)) }
    }

    /// A number.
    package func checkedDouble(_ key: String) async throws(ConfigurationError) -> Double? {
        try await read(key) { try await fetchDouble(forKey: ConfigKey(key)) }
    }

    /// `true` or `false`.
    package func checkedBool(_ key: String) async throws(ConfigurationError) -> Bool? {
        try await read(key) { try await fetchBool(forKey: ConfigKey(key)) }
    }

    /// A duration given in whole seconds ≥ 0 (`…Seconds` keys).
    package func checkedSeconds(_ key: String) async throws(ConfigurationError) -> Duration? {
        try await checkedInt(key).map { (seconds) throws(ConfigurationError) in
            guard seconds >= 0 else { throw ConfigurationError(.outOfRange, key: key, reason: "must be a whole number of seconds ≥ 0, not \(seconds)") }
            return .seconds(seconds)
        }
    }

    /// A duration given in whole milliseconds ≥ 0 (`…Ms` keys).
    package func checkedMilliseconds(_ key: String) async throws(ConfigurationError) -> Duration? {
        try await checkedInt(key).map { (milliseconds) throws(ConfigurationError) in
            guard milliseconds >= 0 else {
                throw ConfigurationError(.outOfRange, key: key, reason: "must be a whole number of milliseconds ≥ 0, not \(milliseconds)")
            }
            return .milliseconds(milliseconds)
        }
    }

    /// A list of strings, each parsed by `parse`; an item that does not parse names the key and the item.
    package func checkedList<Item>(_ key: String, _ noun: String, parse: (String) throws -> Item) async throws(ConfigurationError) -> [Item]? {
        guard let texts = try await checkedStrings(key) else { return nil }
        var items: [Item] = []
        for text in texts {
            do {
                items.append(try parse(text))
            } catch {
                throw ConfigurationError(.invalidValue, key: key, reason: "holds \(noun) that cannot be used, '\(text)': \(error)", cause: error)
            }
        }
        return items
    }

    /// One of a fixed set of words.
    package func checkedChoice<Value>(_ key: String, _ choices: KeyValuePairs<String, Value>) async throws(ConfigurationError) -> Value? {
        guard let text = try await checkedString(key) else { return nil }
        guard let value = choices.first(where: { $0.key == text })?.value else {
            let words = choices.map(\.key).joined(separator: ", ")
            throw ConfigurationError(.invalidValue, key: key, reason: "must be one of \(words), not '\(text)'")
        }
        return value
    }

    /// Runs one fetch, naming the key in any error: a provider's own error (which may already say where the value
    /// came from) is kept as the cause.
    private func read<Value>(_ key: String, _ body: () async throws -> Value?) async throws(ConfigurationError) -> Value? {
        do {
            return try await body()
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(.invalidValue, key: key, reason: "cannot be read: \(error)", cause: error)
        }
    }
}
