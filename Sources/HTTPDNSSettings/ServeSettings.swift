import FoundationEssentials
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSServer

/// The settings of `httpdns serve`: its table of keys, and the library configurations they make.
///
/// A key that is not set leaves the library's own default in place, so no default is written twice. The
/// configurations are checked by the libraries themselves (`validate()`), and an error from them is reported
/// under the key a user wrote.
public struct ServeSettings: Sendable {
    /// One source of the service's upstream: what ``ServeSettings/upstreams`` lists.
    public enum UpstreamSource: Sendable {
        /// The plain DNS upstreams, through c-ares as ``ServeSettings/upstream`` says (its `servers`; none: the
        /// system's resolvers).
        case plain
        /// DNS over TLS to servers whose certificates must hold one name (or, without one, their addresses).
        case dot(DoTSource.Configuration)
        /// DNS over HTTPS to servers whose certificates must hold one name (or, without one, their addresses).
        case doh(DoHSource.Configuration)
    }

    public static let listen = Setting("listen", .hostAndPort, flag: "--listen")
    /// Plain `IP[:PORT]` upstreams go to c-ares (``upstream``), `tls://` and `https://` ones to DNS over TLS and
    /// over HTTPS (``upstreams``); read by the command itself, so that it may hold any of them.
    public static let upstream = Setting("upstream", .upstreams, flag: "--upstream")
    public static let upstreamTCP = Setting("upstreamTCP", .flag, flag: "--upstream-tcp")
    public static let upstreamCACert = Setting(
        "upstreamCACert",
        .text,
        flag: "--upstream-cacert",
        environmentVariable: "HTTPDNS_UPSTREAM_CACERT"
    )
    public static let upstreamPins = Setting("upstreamPins", .pins, flag: "--upstream-pin", environmentVariable: "HTTPDNS_UPSTREAM_PINS")
    public static let tlsCert = Setting("tlsCert", .text, flag: "--tls-cert", libraryKey: "server.tlsCertificatePath")
    public static let tlsKey = Setting("tlsKey", .text, flag: "--tls-key", libraryKey: "server.tlsKeyPath")
    public static let maxHostsPerBatch = Setting("maxHostsPerBatch", .positiveInteger, libraryKey: "server.maxHostsPerBatch")
    public static let maxURLLength = Setting("maxURLLength", .positiveInteger, libraryKey: "server.maxURLLength")
    public static let maxDNSMessageBytes = Setting("maxDNSMessageBytes", .positiveInteger, libraryKey: "server.maxDNSMessageBytes")
    public static let rateLimitPerSecond = Setting("rateLimitPerSecond", .nonNegativeNumber, libraryKey: "server.rateLimitPerSecond")
    public static let rateLimitBurst = Setting("rateLimitBurst", .nonNegativeNumber, libraryKey: "server.rateLimitBurst")
    public static let maxConnections = Setting("maxConnections", .positiveInteger, libraryKey: "server.maxConnections")
    public static let idleTimeoutSeconds = Setting("idleTimeoutSeconds", .positiveInteger, libraryKey: "server.idleTimeoutSeconds")
    public static let headerTimeoutSeconds = Setting("headerTimeoutSeconds", .positiveInteger, libraryKey: "server.headerTimeoutSeconds")
    public static let maxRequestBodyBytesHeld = Setting(
        "maxRequestBodyBytesHeld",
        .positiveInteger,
        libraryKey: "server.maxRequestBodyBytesHeld"
    )
    public static let maxOpenStreams = Setting("maxOpenStreams", .positiveInteger, libraryKey: "server.maxOpenStreams")
    public static let logLevel = Setting(
        "logLevel",
        .choice(["trace", "debug", "info", "notice", "warning", "error", "critical"]),
        flag: "--log-level"
    )
    public static let accounts = Setting("accounts", .accounts, environmentVariable: "HTTPDNS_ACCOUNTS_FILE", isSecret: true)
    public static let upstreamTimeoutMs = Setting("upstreamTimeoutMs", .positiveInteger, libraryKey: "upstream.timeoutMs")
    public static let upstreamTries = Setting("upstreamTries", .positiveInteger, libraryKey: "upstream.tries")
    public static let cacheMaxEntries = Setting("cacheMaxEntries", .positiveInteger, libraryKey: "cache.maxEntries")
    public static let cacheMinTTLSeconds = Setting("cacheMinTTLSeconds", .seconds, libraryKey: "cache.minTTLSeconds")
    public static let cacheMaxTTLSeconds = Setting("cacheMaxTTLSeconds", .seconds, libraryKey: "cache.maxTTLSeconds")
    public static let cacheNegativeTTLSeconds = Setting("cacheNegativeTTLSeconds", .seconds, libraryKey: "cache.negativeTTLSeconds")
    public static let cacheMaxStaleSeconds = Setting("cacheMaxStaleSeconds", .seconds, libraryKey: "cache.maxStaleSeconds")

    /// Every key of `httpdns serve`, in the order docs/SERVICE.md lists them.
    public static let table: [Setting] = [
        listen, upstream, upstreamTCP, upstreamCACert, upstreamPins, tlsCert, tlsKey, maxHostsPerBatch, maxURLLength, maxDNSMessageBytes,
        rateLimitPerSecond, rateLimitBurst, maxConnections, idleTimeoutSeconds, headerTimeoutSeconds, maxRequestBodyBytesHeld,
        maxOpenStreams, logLevel, accounts, upstreamTimeoutMs, upstreamTries, cacheMaxEntries,
        cacheMinTTLSeconds, cacheMaxTTLSeconds, cacheNegativeTTLSeconds, cacheMaxStaleSeconds,
    ]

    /// The service's settings.
    public var server = HTTPDNSServerConfiguration()
    /// How the service's c-ares source reaches the plain DNS upstreams (``UpstreamSource/plain``).
    public var upstream = CAresSource.Configuration()
    /// The sources the service asks, in order (the first healthy one answers; see ``UpstreamSource``): one for the
    /// plain DNS upstreams, and one for each kind of encrypted upstream and name its certificates must hold, each
    /// where the first of its servers is listed. `[.plain]` when no upstream is set: c-ares to the system's resolvers.
    public var upstreams: [UpstreamSource] = [.plain]
    /// The resolver cache's settings.
    public var cache = ResolverCache.Configuration()
    /// `trace` … `critical`.
    public var logLevel = "info"

    /// Reads every key, each library its own section (`server`, `upstream`, `cache`: ``Setting/libraryKey``), then
    /// checks the configurations they make with the libraries' own `validate()`.
    /// - Throws: ``SettingError`` naming the key, and where its value came from when that is where it went wrong.
    public init(reading reader: SettingsReader) async throws(SettingError) {
        server = try await reader.library("server") { (config) throws(ConfigurationError) in try await HTTPDNSServerConfiguration(configReader: config) }
        upstream = try await reader.library("upstream") { (config) throws(ConfigurationError) in try await CAresSource.Configuration(configReader: config) }
        cache = try await reader.library("cache") { (config) throws(ConfigurationError) in try await ResolverCache.Configuration(configReader: config) }
        if let text = try await reader.string(Self.listen) {
            let listen = try HostAndPort(text)
            (server.host, server.port) = (listen.host, listen.port)
        }
        if try await reader.bool(Self.upstreamTCP) == true { upstream.transport = .tcp }
        try await readUpstreams(reader)
        // Documented: a burst below 1 is raised to 1 (a bucket must hold at least one request).
        server.rateLimitBurst = max(1, server.rateLimitBurst)
        if let value = try await reader.string(Self.logLevel) { logLevel = value }
        if let accounts = try await reader.accounts(Self.accounts) {
            server.accounts = accounts.mapValues {
                HTTPDNSServerConfiguration.Account(
                    secret: $0.secret,
                    requireSignature: $0.requireSignature,
                    allowMD5Signature: $0.allowMD5Signature
                )
            }
        }
        // c-ares reports no negative TTL, so cacheNegativeTTLSeconds is the one every negative answer gets: the
        // negative clamps widen to let it through.
        cache.maxNegativeTTL = max(cache.maxNegativeTTL, cache.negativeTTL)
        cache.minNegativeTTL = min(cache.minNegativeTTL, cache.negativeTTL)
        try validate()
    }

    /// The settings that apply to plain DNS upstreams only (c-ares's).
    static let plainUpstreamSettings = [upstreamTCP, upstreamTimeoutMs, upstreamTries]

    /// Groups the upstreams into the sources the service asks (``upstreams``), and refuses the settings of a kind
    /// not in use.
    private mutating func readUpstreams(_ reader: SettingsReader) async throws(SettingError) {
        enum GroupKey: Hashable {
            case plain
            case tls(name: String?)
            case https(name: String?)
        }
        var plain: [DNSServerAddress] = []
        var order: [GroupKey] = []
        var tls: [String?: [DoTEndpoint]] = [:]
        var https: [String?: [ServiceEndpoint]] = [:]
        for text in try await reader.strings(Self.upstream) ?? [] {
            // Checked and made canonical as it was read (SettingKind.upstreams): this cannot fail.
            let server: UpstreamServer
            do {
                server = try UpstreamServer(parsing: text)
            } catch {
                throw SettingError(.invalidValue, "\(Self.upstream.names) holds a server that cannot be used: \(error)", cause: error)
            }
            let key: GroupKey
            switch server.kind {
            case .plain(let address):
                plain.append(address)
                key = .plain
            case .tls(let endpoint, let name):
                tls[name, default: []].append(endpoint)
                key = .tls(name: name)
            case .https(let endpoint, let name):
                https[name, default: []].append(endpoint)
                key = .https(name: name)
            }
            if !order.contains(key) { order.append(key) }
        }
        upstream.servers = plain
        let cacert = try await reader.string(Self.upstreamCACert)
        let pins = try await reader.strings(Self.upstreamPins) ?? []
        guard order.contains(where: { $0 != .plain }) else {
            upstreams = [.plain]
            let encryptedOnly = (cacert == nil ? [] : [Self.upstreamCACert.names]) + (pins.isEmpty ? [] : [Self.upstreamPins.names])
            if !encryptedOnly.isEmpty {
                let upstreams =
                    plain.isEmpty ? "no upstream is set, so the system's resolvers are asked over plain DNS" : "the upstreams are plain DNS"
                throw SettingError(
                    .inconsistent,
                    "\(encryptedOnly.joined(separator: " and ")) \(encryptedOnly.count == 1 ? "applies" : "apply") to encrypted upstreams "
                        + "(--upstream tls://IP[:PORT][#NAME] or https://IP[:PORT][/PATH][#NAME]), but \(upstreams)"
                )
            }
            return
        }
        if plain.isEmpty {
            var plainOnly: [String] = []
            for setting in Self.plainUpstreamSettings {
                if try await reader.isSet(setting) { plainOnly.append(setting.names) }
            }
            if let last = plainOnly.last {
                let settings = plainOnly.count == 1 ? "\(last) applies" : "\(plainOnly.dropLast().joined(separator: ", ")) and \(last) apply"
                throw SettingError(.inconsistent, "\(settings) to plain DNS upstreams (c-ares), and every upstream is encrypted")
            }
        }
        var checkedPins: [SPKIPin] = []
        for text in pins {
            do {
                checkedPins.append(try SPKIPin(parsing: text))
            } catch {
                throw SettingError(.invalidValue, "\(Self.upstreamPins.names) holds a pin that cannot be used: \(error)", cause: error)
            }
        }
        // A kind with more than one certificate name has a source per name, each named for it in metrics and logs.
        let tlsNames = tls.count > 1
        let httpsNames = https.count > 1
        func sourceName(_ kind: String, _ name: String?, distinct: Bool) -> String {
            // `(address)` cannot be a host name, so the source without #NAME is named apart from every other.
            distinct ? "\(kind)#\(name ?? "(address)")" : kind
        }
        upstreams = order.map { key in
            switch key {
            case .plain:
                return .plain
            case .tls(let name):
                var dot = DoTSource.Configuration(servers: tls[name]!)
                dot.serverName = name
                dot.extraTrustRootsPEMFile = cacert
                dot.pins = checkedPins
                dot.name = sourceName("dot", name, distinct: tlsNames)
                return .dot(dot)
            case .https(let name):
                var connection = ServiceConnection(servers: https[name]!)
                connection.serverName = name
                connection.extraTrustRootsPEMFile = cacert
                connection.pins = checkedPins
                var doh = DoHSource.Configuration(connection: connection)
                doh.name = sourceName("doh", name, distinct: httpsNames)
                return .doh(doh)
            }
        }
    }

    /// The library keys these settings fill, by the key a user writes.
    private static let libraryKeys: [String: Setting] = [
        "host": listen, "port": listen,
        "tlsCertificatePath": tlsCert, "tlsKeyPath": tlsKey,
        "maxHostsPerBatch": maxHostsPerBatch, "maxURLLength": maxURLLength, "maxDNSMessageBytes": maxDNSMessageBytes,
        "rateLimitPerSecond": rateLimitPerSecond, "rateLimitBurst": rateLimitBurst, "accounts": accounts,
        "maxConnections": maxConnections, "idleTimeout": idleTimeoutSeconds, "headerTimeout": headerTimeoutSeconds,
        "maxRequestBodyBytesHeld": maxRequestBodyBytesHeld, "maxOpenStreams": maxOpenStreams,
        "timeout": upstreamTimeoutMs, "tries": upstreamTries,
        "maxEntries": cacheMaxEntries, "minTTL": cacheMinTTLSeconds, "maxTTL": cacheMaxTTLSeconds,
        "negativeTTL": cacheNegativeTTLSeconds, "maxStale": cacheMaxStaleSeconds,
    ]

    /// A library's error, every library key in it (the one it is about, and any its reason names) replaced by the
    /// key a user writes: `cacheMinTTLSeconds (600) is larger than …, cacheMaxTTLSeconds (60)`.
    static func inUsersKeys(_ error: ConfigurationError) -> String {
        var reason = error.reason
        // Only camel-case keys: a plain word such as `port` or `tries` may also be prose or a user's value.
        for (libraryKey, setting) in libraryKeys where libraryKey != setting.key && libraryKey.contains(where: \.isUppercase) {
            if let pattern = try? Regex("\\b\(libraryKey)\\b") { reason = reason.replacing(pattern, with: setting.key) }
        }
        return "\(libraryKeys[error.key]?.key ?? error.key) \(reason)"
    }

    /// The libraries' checks, their errors named by the keys a user writes.
    private func validate() throws(SettingError) {
        do {
            try server.validate()
            try upstream.validate()
            try cache.validate()
        } catch {
            throw SettingError(error.code == .inconsistent ? .inconsistent : .invalidValue, Self.inUsersKeys(error), cause: error)
        }
        for path in [server.tlsCertificatePath, server.tlsKeyPath].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: path) {
            throw SettingError(.unreadableFile, "cannot read \(path) (tlsCert / tlsKey)")
        }
        do {
            _ = try server.tlsConfiguration()
        } catch {
            throw SettingError(.unreadableFile, "\(error)", cause: error)
        }
        for source in upstreams {
            let trustFile: String?
            switch source {
            case .plain:
                continue
            case .dot(let dot):
                do {
                    try dot.validate()
                } catch {
                    throw SettingError(error.code == .inconsistent ? .inconsistent : .invalidValue, "\(Self.upstream.names): \(error)", cause: error)
                }
                trustFile = dot.extraTrustRootsPEMFile
            case .doh(let doh):
                // The rest is checked when the source is made, at start-up.
                trustFile = doh.connection.extraTrustRootsPEMFile
            }
            // Whether it holds certificates is found when the source is made, at start-up.
            if let path = trustFile, !FileManager.default.isReadableFile(atPath: path) {
                throw SettingError(.unreadableFile, "cannot read \(path), the file of \(Self.upstreamCACert.names)")
            }
        }
    }
}
