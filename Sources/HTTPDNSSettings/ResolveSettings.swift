import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore

/// The settings of `httpdns resolve`: its table of keys, and the sources they make.
///
/// Every flag has a key in the configuration file (`--config`, or `HTTPDNS_CONFIG`) and an `HTTPDNS_…` variable, read
/// in the precedence flags, then the environment, then the file. A key that is not set leaves the library's own
/// default in place.
public struct ResolveSettings: Sendable {
    /// Where `resolve` asks.
    public enum Source: String, Sendable, CaseIterable {
        /// The policy: the HTTPDNS service (native API), or the DNS-over-TLS servers when `servers` are `tls://`
        /// ones, then c-ares, then the system resolver, with the guard.
        case auto
        /// The HTTPDNS service's native API (`/d`).
        case httpdns
        /// RFC 8484 DoH, at the URL's path or `/dns-query`.
        case doh
        /// DNS over TLS (RFC 7858) to `tls://IP[:PORT]` servers.
        case dot
        /// Plain DNS through c-ares.
        case cares
        /// getaddrinfo.
        case system

        /// Whether it asks an HTTPDNS service.
        public var asksService: Bool { self == .auto || self == .httpdns || self == .doh }
    }

    public static let source = Setting("source", .choice(Source.allCases.map(\.rawValue)), flag: "--source")
    public static let servers = Setting("servers", .serviceURLs, flag: "--server", libraryKey: "service.servers")
    public static let serverName = Setting("serverName", .text, flag: "--server-name", libraryKey: "service.serverName")
    public static let cacert = Setting("cacert", .text, flag: "--cacert", libraryKey: "service.extraTrustRootsPEMFile")
    public static let pins = Setting("pins", .pins, flag: "--pin", libraryKey: "service.pins")
    public static let budgetMs = Setting("budgetMs", .positiveInteger, flag: "--budget-ms", libraryKey: "service.budgetMs")
    public static let attemptTimeoutMs = Setting(
        "attemptTimeoutMs",
        .positiveInteger,
        flag: "--attempt-timeout-ms",
        libraryKey: "service.attemptTimeoutMs"
    )
    public static let fallbacks = Setting("fallbacks", .choices(["cares", "system"]), flag: "--fallback")
    public static let dns = Setting("dns", .dnsServers, flag: "--dns", libraryKey: "cares.servers")
    public static let tcp = Setting("tcp", .flag, flag: "--tcp")
    public static let timeoutMs = Setting("timeoutMs", .positiveInteger, flag: "--timeout-ms", libraryKey: "cares.timeoutMs")
    public static let tries = Setting("tries", .positiveInteger, flag: "--tries", libraryKey: "cares.tries")
    public static let type = Setting("type", .choice(["A", "AAAA", "ANY"]), flag: "--type")
    public static let json = Setting("json", .flag, flag: "--json")

    /// Every key of `httpdns resolve`, in the order docs/CLI.md lists them.
    public static let table: [Setting] = [
        source, servers, serverName, cacert, pins, budgetMs, attemptTimeoutMs, fallbacks, dns, tcp, timeoutMs, tries, type, json,
    ]

    public var source = Source.cares
    /// How the HTTPDNS service is reached; nil when no `servers` are set, or when they are DNS-over-TLS servers.
    public var service: ServiceConnection?
    /// The DNS-over-TLS servers and how they are reached, when `servers` are `tls://IP[:PORT]` ones; else nil.
    public var dot: DoTSource.Configuration?
    /// What `auto` asks when the service fails, in order: `cares`, `system`, or both (the default).
    public var fallbacks: [String] = ["cares", "system"]
    /// How c-ares asks.
    public var cares = CAresSource.Configuration()
    public var families = AddressFamilies.all
    public var json = false

    /// Reads every key, the service's through `ServiceConnection(configReader:)` (section `service`), or, for
    /// `tls://` servers, through `DoTSource.Configuration(configReader:)` (the same section and keys), and c-ares's
    /// through `CAresSource.Configuration(configReader:)` (section `cares`), and checks that they fit together and
    /// the libraries accept them.
    /// - Throws: ``SettingError`` naming the key, and where its value came from when that is where it went wrong.
    public init(reading reader: SettingsReader) async throws(SettingError) {
        if let text = try await reader.string(Self.source) { source = Source(rawValue: text)! }
        if try await reader.isGiven(Self.servers) {
            // One kind in the list, never both (`SettingKind.serviceURLs` refuses a mix).
            if try await reader.strings(Self.servers)?.first?.hasPrefix("tls://") == true {
                dot = try await reader.library("service") { (config) throws(ConfigurationError) in
                    try await DoTSource.Configuration(configReader: config)
                }
            } else {
                service = try await reader.library("service") { (config) throws(ConfigurationError) in try await ServiceConnection(configReader: config) }
            }
        }
        let fallbackList = try await reader.strings(Self.fallbacks)
        if let fallbackList { fallbacks = fallbackList }
        cares = try await reader.library("cares") { (config) throws(ConfigurationError) in try await CAresSource.Configuration(configReader: config) }
        if try await reader.bool(Self.tcp) == true { cares.transport = .tcp }
        switch try await reader.string(Self.type) {
        case "A": families = .ipv4
        case "AAAA": families = .ipv6
        default: families = .all
        }
        json = try await reader.bool(Self.json) ?? false
        var serviceKeysSet = false
        for setting in [Self.serverName, Self.cacert, Self.pins, Self.budgetMs, Self.attemptTimeoutMs] {
            if try await reader.isGiven(setting) { serviceKeysSet = true }
        }
        var caresKeysSet: [String] = []
        for setting in [Self.tcp, Self.timeoutMs, Self.tries] {
            if try await reader.isSet(setting) { caresKeysSet.append(setting.key) }
        }
        try check(serviceKeysSet: serviceKeysSet, caresKeysSet: caresKeysSet)
        if fallbackList != nil, source != .auto {
            throw SettingError(.inconsistent, "--fallback applies to --source auto, not \(source.rawValue)")
        }
    }

    /// The keys must fit the source, wherever each came from (a flag, a variable or the file: keys that cannot apply
    /// are refused rather than silently unused), and the libraries must accept what they make.
    private func check(serviceKeysSet: Bool, caresKeysSet: [String]) throws(SettingError) {
        switch source {
        case .dot:
            if let service {
                throw SettingError(
                    .inconsistent,
                    "--source dot asks DNS-over-TLS servers, tls://IP[:PORT], and --server (servers, HTTPDNS_SERVERS) names an HTTPDNS "
                        + "service, \(service.servers[0]): ask it with --source httpdns, doh or auto, or name a tls:// server"
                )
            }
            if dot == nil {
                throw SettingError(
                    .inconsistent,
                    "--source dot asks DNS-over-TLS servers: name one with --server tls://IP[:PORT] (servers, HTTPDNS_SERVERS)"
                )
            }
        case .httpdns, .doh:
            if let dot {
                throw SettingError(
                    .inconsistent,
                    "--source \(source.rawValue) asks an HTTPDNS service, https://IP[:PORT][/PATH], and --server (servers, HTTPDNS_SERVERS) "
                        + "names a DNS-over-TLS server, \(dot.servers[0]): ask it with --source dot or auto, or name an https:// service"
                )
            }
            if service == nil {
                throw SettingError(
                    .inconsistent,
                    "--source \(source.rawValue) asks an HTTPDNS service: name one with --server URL (servers, HTTPDNS_SERVERS)"
                )
            }
        case .auto:
            if service == nil, dot == nil {
                throw SettingError(
                    .inconsistent,
                    "--source auto asks an HTTPDNS service: name one with --server URL (servers, HTTPDNS_SERVERS), "
                        + "https://IP[:PORT][/PATH], or DNS-over-TLS servers with tls://IP[:PORT]"
                )
            }
        case .cares, .system:
            if service != nil || dot != nil || serviceKeysSet {
                throw SettingError(
                    "--server, --server-name, --cacert, --pin, --budget-ms and --attempt-timeout-ms "
                        + "(servers, serverName, cacert, pins, budgetMs, attemptTimeoutMs; "
                        + "HTTPDNS_SERVERS, …) apply to --source auto, httpdns, doh or dot, not \(source.rawValue)"
                )
            }
        }
        if source == .system, !cares.servers.isEmpty {
            throw SettingError(.inconsistent, "--dns (dns, HTTPDNS_DNS) applies to --source cares or auto; the system resolver uses /etc/resolv.conf")
        }
        let caresKeys = (cares.servers.isEmpty ? [] : [Self.dns.key]) + caresKeysSet
        let asksCAres = source == .cares || (source == .auto && fallbacks.contains("cares"))
        if !asksCAres, !caresKeys.isEmpty {
            let flags = Self.table.filter { caresKeys.contains($0.key) }.map { "\($0.flag ?? $0.key) (\($0.key), \($0.environmentVariable))" }
            let without = source == .auto ? " with --fallback \(fallbacks.joined(separator: ","))" : ""
            throw SettingError(.inconsistent, "\(flags.joined(separator: ", ")) set c-ares, which --source \(source.rawValue)\(without) does not ask")
        }
        do {
            try cares.validate()
        } catch {
            let flag = ["timeout": Self.timeoutMs, "tries": Self.tries][error.key]?.flag ?? error.key
            throw SettingError(error.code == .inconsistent ? .inconsistent : .invalidValue, "\(flag) \(error.reason)", cause: error)
        }
    }
}
