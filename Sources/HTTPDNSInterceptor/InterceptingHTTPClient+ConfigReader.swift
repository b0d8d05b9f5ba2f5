import Configuration
import HTTPDNSCore
import NIOSSL

extension InterceptingHTTPClient.Configuration {
    /// The interceptor's settings from a swift-configuration reader, usually one scoped to its section. A key that
    /// is not set keeps its default.
    ///
    /// Keys (durations are whole numbers in the unit the key ends with):
    /// - `excludedHosts` (string array): host patterns sent as given, resolved by the system.
    /// - `families` (string): `ipv4`, `ipv6` or `all`.
    /// - `addressOrder` (string): `ipv4First` or `ipv6First`.
    /// - `maxRedirects`, `maxClients` (int).
    /// - `allowsInsecureRedirects`, `decompression` (bool).
    /// - `connectTimeoutMs`, `readTimeoutMs` (int).
    /// - `connectionAttemptDelayMs` (int): Happy Eyeballs' delay between connection attempts; `happyEyeballs`
    ///   (bool) `false` turns the race off.
    /// - `extraTrustRootsPEMFile` (string): a PEM file of certificates to trust for origins besides the system's.
    ///
    /// Canonicalisation and the storage policy are set in code. Each value is checked as it is read;
    /// `InterceptingHTTPClient` checks the whole when it is made.
    /// - Parameter configReader: where the values are read.
    /// - Throws: `ConfigurationError` naming the key whose value cannot be read or used.
    public init(configReader: ConfigReader) async throws(ConfigurationError) {
        self.init()
        if let patterns = try await configReader.checkedStrings("excludedHosts") {
            do {
                excludedHosts = try HostPatterns(patterns)
            } catch {
                throw ConfigurationError(.invalidValue, key: "excludedHosts", reason: error.reason, cause: error)
            }
        }
        if let value = try await configReader.checkedChoice("families", ["ipv4": AddressFamilies.ipv4, "ipv6": .ipv6, "all": .all]) {
            families = value
        }
        if let value = try await configReader.checkedChoice("addressOrder", ["ipv4First": AddressOrder.ipv4First, "ipv6First": .ipv6First]) {
            addressOrder = value
        }
        if let value = try await configReader.checkedInt("maxRedirects") { maxRedirects = value }
        if let value = try await configReader.checkedInt("maxClients") { maxClients = value }
        if let value = try await configReader.checkedBool("allowsInsecureRedirects") { allowsInsecureRedirects = value }
        if let value = try await configReader.checkedBool("decompression") { decompression = value }
        if let value = try await configReader.checkedMilliseconds("connectTimeoutMs") { connectTimeout = value }
        if let value = try await configReader.checkedMilliseconds("readTimeoutMs") { readTimeout = value }
        let attemptDelay = try await configReader.checkedMilliseconds("connectionAttemptDelayMs")
        if let attemptDelay { connectionAttemptDelay = attemptDelay }
        if try await configReader.checkedBool("happyEyeballs") == false {
            guard attemptDelay == nil else {
                throw ConfigurationError(
                    .inconsistent,
                    key: "connectionAttemptDelayMs",
                    reason: "sets Happy Eyeballs' delay, which happyEyeballs: false turns off; set one or the other"
                )
            }
            connectionAttemptDelay = nil
        }
        if let path = try await configReader.checkedString("extraTrustRootsPEMFile") {
            // Read now, so that a file that is missing or not PEM is this key's error, not every request's.
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMFile(path)
            } catch {
                throw ConfigurationError(.unreadable, key: "extraTrustRootsPEMFile", reason: "\(path) is not a PEM certificate file: \(error)", cause: error)
            }
            guard !certificates.isEmpty else {
                throw ConfigurationError(.unreadable, key: "extraTrustRootsPEMFile", reason: "\(path) holds no certificate")
            }
            tls.additionalTrustRoots.append(.certificates(certificates))
        }
    }
}
