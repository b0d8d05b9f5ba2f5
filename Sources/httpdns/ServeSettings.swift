import Foundation
import HTTPDNSCAres
import HTTPDNSCore
import HTTPDNSWire
import HTTPDNSServer

/// The settings of `httpdns serve`, from a JSON file, `HTTPDNS_…` environment variables and flags, in rising
/// precedence. Every key is listed in ``keys`` and documented in docs/SERVICE.md; an unknown or invalid one
/// stops start-up with a message naming it.
struct ServeSettings {
    var listen = "127.0.0.1:8053"
    var upstreams: [String] = []
    var upstreamTCP = false
    var tlsCert: String?
    var tlsKey: String?
    var maxHostsPerBatch = 5
    var maxURLLength = 2048
    var maxDNSMessageBytes = 65_535
    var rateLimitPerSecond = 100.0
    var rateLimitBurst = 200.0
    var logLevel = "info"
    var accounts: [String: HTTPDNSServerConfiguration.Account] = [:]
    var upstreamTimeoutMs = CAresSource.Configuration().timeoutMs
    var upstreamTries = CAresSource.Configuration().tries
    var cache = ResolverCache.Configuration()

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    /// Every setting: its key in the configuration file and its environment variable.
    static let keys: [(file: String, environment: String)] = [
        ("listen", "HTTPDNS_LISTEN"),
        ("upstream", "HTTPDNS_UPSTREAM"),
        ("upstreamTCP", "HTTPDNS_UPSTREAM_TCP"),
        ("tlsCert", "HTTPDNS_TLS_CERT"),
        ("tlsKey", "HTTPDNS_TLS_KEY"),
        ("maxHostsPerBatch", "HTTPDNS_MAX_HOSTS_PER_BATCH"),
        ("maxURLLength", "HTTPDNS_MAX_URL_LENGTH"),
        ("maxDNSMessageBytes", "HTTPDNS_MAX_DNS_MESSAGE_BYTES"),
        ("rateLimitPerSecond", "HTTPDNS_RATE_LIMIT_PER_SECOND"),
        ("rateLimitBurst", "HTTPDNS_RATE_LIMIT_BURST"),
        ("logLevel", "HTTPDNS_LOG_LEVEL"),
        ("accounts", "HTTPDNS_ACCOUNTS_FILE"),
        ("upstreamTimeoutMs", "HTTPDNS_UPSTREAM_TIMEOUT_MS"),
        ("upstreamTries", "HTTPDNS_UPSTREAM_TRIES"),
        ("cacheMaxEntries", "HTTPDNS_CACHE_MAX_ENTRIES"),
        ("cacheMinTTLSeconds", "HTTPDNS_CACHE_MIN_TTL_SECONDS"),
        ("cacheMaxTTLSeconds", "HTTPDNS_CACHE_MAX_TTL_SECONDS"),
        ("cacheNegativeTTLSeconds", "HTTPDNS_CACHE_NEGATIVE_TTL_SECONDS"),
        ("cacheMaxStaleSeconds", "HTTPDNS_CACHE_MAX_STALE_SECONDS"),
    ]

    /// Reads a JSON configuration file.
    mutating func apply(file path: String) throws {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw Invalid(description: "cannot read the configuration file \(path): \(error.localizedDescription)")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Invalid(description: "the configuration file \(path) is not a JSON object")
        }
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            guard Self.keys.contains(where: { $0.file == key }) else {
                let known = Self.keys.map(\.file).joined(separator: ", ")
                throw Invalid(description: "\(path): unknown key '\(key)' (known keys: \(known))")
            }
            try apply(key, value, from: "\(path): key '\(key)'")
        }
    }

    /// Reads the `HTTPDNS_…` environment variables that are set.
    mutating func apply(environment: [String: String]) throws {
        for (key, variable) in Self.keys {
            guard let value = environment[variable] else { continue }
            if key == "accounts" {
                try applyAccounts(file: value, from: variable)
            } else if key == "upstream" {
                try apply(key, value.split(separator: ",").map { String($0) }, from: "environment variable \(variable)")
            } else {
                try apply(key, value, from: "environment variable \(variable)")
            }
        }
    }

    /// Sets `key` from a JSON value or an environment string; `origin` names where it came from.
    mutating func apply(_ key: String, _ value: Any, from origin: String) throws {
        func string() throws -> String {
            guard let text = value as? String, !text.isEmpty else { throw Invalid(description: "\(origin) must be a non-empty string") }
            return text
        }
        func positiveInteger() throws -> Int {
            if let number = value as? Int, number > 0 { return number }
            if let text = value as? String, let number = Int(text), number > 0 { return number }
            throw Invalid(description: "\(origin) must be a positive whole number, not '\(value)'")
        }
        func nonNegativeNumber() throws -> Double {
            if let number = value as? Double, number >= 0 { return number }
            if let number = value as? Int, number >= 0 { return Double(number) }
            if let text = value as? String, let number = Double(text), number >= 0 { return number }
            throw Invalid(description: "\(origin) must be a number ≥ 0, not '\(value)'")
        }
        func seconds() throws -> UInt32 {
            let number = try nonNegativeNumber()
            guard number == number.rounded(), number <= Double(UInt32.max) else {
                throw Invalid(description: "\(origin) must be a whole number of seconds, not '\(value)'")
            }
            return UInt32(number)
        }
        switch key {
        case "listen": listen = try string()
        case "upstream":
            if let list = value as? [String] {
                upstreams = list
            } else {
                upstreams = [try string()]
            }
        case "upstreamTCP":
            if let flag = value as? Bool {
                upstreamTCP = flag
            } else if let text = value as? String, ["true", "false", "1", "0"].contains(text) {
                upstreamTCP = text == "true" || text == "1"
            } else {
                throw Invalid(description: "\(origin) must be true or false")
            }
        case "tlsCert": tlsCert = try string()
        case "tlsKey": tlsKey = try string()
        case "maxHostsPerBatch": maxHostsPerBatch = try positiveInteger()
        case "maxURLLength": maxURLLength = try positiveInteger()
        case "maxDNSMessageBytes": maxDNSMessageBytes = try positiveInteger()
        case "rateLimitPerSecond": rateLimitPerSecond = try nonNegativeNumber()
        case "rateLimitBurst": rateLimitBurst = max(1, try nonNegativeNumber())
        case "upstreamTimeoutMs": upstreamTimeoutMs = try positiveInteger()
        case "upstreamTries": upstreamTries = try positiveInteger()
        case "cacheMaxEntries": cache.maxEntries = try positiveInteger()
        case "cacheMinTTLSeconds": cache.minTTLSeconds = try seconds()
        case "cacheMaxTTLSeconds": cache.maxTTLSeconds = try seconds()
        case "cacheNegativeTTLSeconds": cache.negativeTTLSeconds = try seconds()
        case "cacheMaxStaleSeconds": cache.maxStaleSeconds = try seconds()
        case "logLevel":
            let level = try string()
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(level) else {
                throw Invalid(description: "\(origin) must be trace, debug, info, notice, warning, error or critical")
            }
            logLevel = level
        case "accounts":
            if let path = value as? String {
                try applyAccounts(file: path, from: origin)
            } else {
                try applyAccounts(value, from: origin)
            }
        default:
            throw Invalid(description: "\(origin): unknown setting")
        }
    }

    private mutating func applyAccounts(file path: String, from origin: String) throws {
        guard let data = FileManager.default.contents(atPath: path), let object = try? JSONSerialization.jsonObject(with: data) else {
            throw Invalid(description: "\(origin): cannot read accounts from \(path) (a JSON object of accounts)")
        }
        try applyAccounts(object, from: "\(origin) (\(path))")
    }

    /// `{"<account>": {"secret": "…", "requireSignature": true, "allowMD5Signature": false}, …}`.
    private mutating func applyAccounts(_ value: Any, from origin: String) throws {
        guard let table = value as? [String: Any] else { throw Invalid(description: "\(origin) must be an object of accounts") }
        var accounts: [String: HTTPDNSServerConfiguration.Account] = [:]
        for (id, entry) in table {
            guard !id.isEmpty, id.utf8.allSatisfy({ $0 != UInt8(ascii: "/") && $0 > 0x20 }) else {
                throw Invalid(description: "\(origin): account id '\(id)' must be non-empty, without '/' or spaces")
            }
            guard let fields = entry as? [String: Any], let secret = fields["secret"] as? String, !secret.isEmpty else {
                throw Invalid(description: "\(origin): account '\(id)' needs a non-empty \"secret\"")
            }
            let known: Set = ["secret", "requireSignature", "allowMD5Signature"]
            if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
                throw Invalid(description: "\(origin): account '\(id)' has an unknown key '\(unknown)' (known: secret, requireSignature, allowMD5Signature)")
            }
            func flag(_ key: String, default value: Bool) throws -> Bool {
                guard let field = fields[key] else { return value }
                // JSONSerialization gives numbers and booleans alike as NSNumber; a boolean's type code is "c".
                guard let number = field as? NSNumber, String(cString: number.objCType) == "c" else {
                    throw Invalid(description: "\(origin): account '\(id)' key '\(key)' must be true or false")
                }
                return number.boolValue
            }
            accounts[id] = .init(
                secret: secret,
                requireSignature: try flag("requireSignature", default: true),
                allowMD5Signature: try flag("allowMD5Signature", default: false)
            )
        }
        self.accounts = accounts
    }

    /// The service configuration, checked as a whole.
    func serverConfiguration() throws -> HTTPDNSServerConfiguration {
        var configuration = HTTPDNSServerConfiguration()
        (configuration.host, configuration.port) = try Self.hostAndPort(listen)
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw Invalid(description: "tlsCert and tlsKey go together: set both (or neither)")
        }
        for path in [tlsCert, tlsKey].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: path) {
            throw Invalid(description: "cannot read \(path) (tlsCert / tlsKey)")
        }
        configuration.tlsCertificatePath = tlsCert
        configuration.tlsKeyPath = tlsKey
        configuration.maxHostsPerBatch = maxHostsPerBatch
        configuration.maxURLLength = maxURLLength
        configuration.maxDNSMessageBytes = maxDNSMessageBytes
        configuration.rateLimitPerSecond = rateLimitPerSecond
        configuration.rateLimitBurst = rateLimitBurst
        configuration.accounts = accounts
        return configuration
    }

    /// The cache settings, checked as a whole.
    func cacheConfiguration() throws -> ResolverCache.Configuration {
        guard cache.minTTLSeconds <= cache.maxTTLSeconds else {
            throw Invalid(description: "cacheMinTTLSeconds (\(cache.minTTLSeconds)) is larger than cacheMaxTTLSeconds (\(cache.maxTTLSeconds))")
        }
        var configuration = cache
        // The negative TTL c-ares cannot report must fit the negative clamps.
        configuration.maxNegativeTTLSeconds = max(configuration.maxNegativeTTLSeconds, configuration.negativeTTLSeconds)
        configuration.minNegativeTTLSeconds = min(configuration.minNegativeTTLSeconds, configuration.negativeTTLSeconds)
        return configuration
    }

    func upstreamServers() throws -> [DNSServerAddress] {
        try upstreams.map { text in
            do {
                return try DNSServerAddress(parsing: text.trimmingCharacters(in: .whitespaces))
            } catch {
                throw Invalid(description: "upstream: \(error)")
            }
        }
    }

    /// `HOST:PORT` or `[IPv6]:PORT`.
    static func hostAndPort(_ text: String) throws -> (String, Int) {
        let invalid = Invalid(description: "listen: '\(text)' is not HOST:PORT (for IPv6, [ADDRESS]:PORT)")
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { throw invalid }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { throw invalid }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65_535).contains(port) else { throw invalid }
        return (String(host), port)
    }
}
