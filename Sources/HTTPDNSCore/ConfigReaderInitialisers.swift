import Configuration

extension ResolverCache.Configuration {
    /// The cache's settings from a swift-configuration reader, usually one scoped to the cache's section
    /// (`config.scoped(to: "cache")`). A key that is not set keeps its default.
    ///
    /// Keys (durations are whole numbers in the unit the key ends with):
    /// - `maxEntries`, `maxPendingQueries` (int)
    /// - `minTTLSeconds`, `maxTTLSeconds`, `negativeTTLSeconds`, `minNegativeTTLSeconds`, `maxNegativeTTLSeconds`,
    ///   `staleAnswerTTLSeconds`, `maxStaleSeconds`, `staleRefreshRetrySeconds` (int)
    /// - `staleAnswerClientTimeoutMs` (int)
    /// - `refreshAheadFraction` (double)
    ///
    /// Each value is checked as it is read; the settings are checked against each other by ``validate()``, which
    /// every type that takes a configuration runs.
    /// - Parameter configReader: where the values are read.
    /// - Throws: `ConfigurationError` naming the key whose value cannot be read.
    public init(configReader: ConfigReader) async throws(ConfigurationError) {
        self.init()
        if let value = try await configReader.checkedInt("maxEntries") { maxEntries = value }
        if let value = try await configReader.checkedInt("maxPendingQueries") { maxPendingQueries = value }
        if let value = try await configReader.checkedSeconds("minTTLSeconds") { minTTL = value }
        if let value = try await configReader.checkedSeconds("maxTTLSeconds") { maxTTL = value }
        if let value = try await configReader.checkedSeconds("negativeTTLSeconds") { negativeTTL = value }
        if let value = try await configReader.checkedSeconds("minNegativeTTLSeconds") { minNegativeTTL = value }
        if let value = try await configReader.checkedSeconds("maxNegativeTTLSeconds") { maxNegativeTTL = value }
        if let value = try await configReader.checkedSeconds("staleAnswerTTLSeconds") { staleAnswerTTL = value }
        if let value = try await configReader.checkedSeconds("maxStaleSeconds") { maxStale = value }
        if let value = try await configReader.checkedSeconds("staleRefreshRetrySeconds") { staleRefreshRetry = value }
        if let value = try await configReader.checkedMilliseconds("staleAnswerClientTimeoutMs") { staleAnswerClientTimeout = value }
        if let value = try await configReader.checkedDouble("refreshAheadFraction") { refreshAheadFraction = value }
    }
}

extension HostResolver.Configuration {
    /// The resolution policy's settings from a swift-configuration reader.
    ///
    /// Keys:
    /// - `strictHosts` (string array): host patterns that only the trusted source may resolve (`api.example.com`, or
    ///   `.example.com` for every name under it).
    /// - `allowPrivate` (string array): host patterns whose private answers from a fallback are not a hijack.
    /// - `cache.…`: each source's cache, as `ResolverCache.Configuration(configReader:)` reads them.
    ///
    /// - Parameter configReader: where the values are read.
    /// - Throws: `ConfigurationError` naming the key whose value cannot be read or used.
    public init(configReader: ConfigReader) async throws(ConfigurationError) {
        self.init()
        if let patterns = try await configReader.checkedStrings("strictHosts") {
            strictHosts = try Self.patterns(patterns, key: "strictHosts")
        }
        if let patterns = try await configReader.checkedStrings("allowPrivate") {
            guardConfiguration.privateAnswerAllowList = try Self.patterns(patterns, key: "allowPrivate")
        }
        cache = try await ResolverCache.Configuration(configReader: configReader.scoped(to: "cache"))
    }

    private static func patterns(_ texts: [String], key: String) throws(ConfigurationError) -> HostPatterns {
        do {
            return try HostPatterns(texts)
        } catch {
            throw ConfigurationError(.invalidValue, key: key, reason: error.reason, cause: error)
        }
    }
}
