import Configuration
import HTTPDNSCore

extension ServiceConnection {
    /// How a source reaches its service, from a swift-configuration reader, usually one scoped to the source's
    /// section (`config.scoped(to: "service")`). A key that is not set keeps its default.
    ///
    /// Keys:
    /// - `servers` (string array, required): `https://IP[:PORT][/PATH]` each.
    /// - `serverName` (string): the name the service's certificate holds.
    /// - `extraTrustRootsPEMFile` (string): a PEM file of certificates to trust besides the system's.
    /// - `pins` (string array): SPKI SHA-256 pins, `sha256//BASE64` each.
    /// - `budgetMs`, `attemptTimeoutMs`, `coolDownMs`, `maxCoolDownMs` (int, milliseconds). A budget shorter than the
    ///   default attempt timeout shortens the attempt timeout to the budget, unless `attemptTimeoutMs` is set too;
    ///   an attempt timeout longer than the budget is refused.
    ///
    /// The sources check the rest when they are made.
    /// - Parameter configReader: where the values are read.
    /// - Throws: `ConfigurationError` naming the key whose value cannot be read or used, or `servers` when it is
    ///   missing or empty.
    public init(configReader: ConfigReader) async throws(ConfigurationError) {
        let servers = try await configReader.checkedList("servers", "a service URL", parse: ServiceEndpoint.init(parsing:)) ?? []
        guard !servers.isEmpty else {
            throw ConfigurationError(.invalidValue, key: "servers", reason: "must name at least one service, https://IP[:PORT][/PATH]")
        }
        self.init(servers: servers)
        try await readSharedKeys(configReader)
    }

    /// Every key but `servers`, which DoT's configuration reads by the same rules: the name, trust, pins and timing.
    mutating func readSharedKeys(_ configReader: ConfigReader) async throws(ConfigurationError) {
        serverName = try await configReader.checkedString("serverName")
        extraTrustRootsPEMFile = try await configReader.checkedString("extraTrustRootsPEMFile")
        pins = try await configReader.checkedList("pins", "a pin", parse: SPKIPin.init(parsing:)) ?? []
        if let value = try await configReader.checkedMilliseconds("coolDownMs") { coolDown = value }
        if let value = try await configReader.checkedMilliseconds("maxCoolDownMs") { maxCoolDown = value }
        let budget = try await configReader.checkedMilliseconds("budgetMs")
        let attemptTimeout = try await configReader.checkedMilliseconds("attemptTimeoutMs")
        if let budget {
            self.budget = budget
            self.attemptTimeout = min(self.attemptTimeout, budget)
        }
        if let attemptTimeout {
            guard attemptTimeout <= self.budget else {
                throw ConfigurationError(
                    .inconsistent,
                    key: "attemptTimeoutMs",
                    reason: "must be at most the budget, budgetMs (\(self.budget.clampedMilliseconds) ms), not \(attemptTimeout.clampedMilliseconds)"
                )
            }
            self.attemptTimeout = attemptTimeout
        }
    }
}
