import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore

/// The settings of `httpdns health`: its table of keys, read as every command's are (flags, then `HTTPDNS_…`
/// variables, then the file).
public struct HealthSettings: Sendable {
    public static let servers = Setting("servers", .serviceURLs, flag: "--server", libraryKey: "service.servers")
    public static let serverName = Setting("serverName", .text, flag: "--server-name", libraryKey: "service.serverName")
    public static let cacert = Setting("cacert", .text, flag: "--cacert", libraryKey: "service.extraTrustRootsPEMFile")
    public static let pins = Setting("pins", .pins, flag: "--pin", libraryKey: "service.pins")
    public static let dns = Setting("dns", .dnsServers, flag: "--dns")
    public static let tcp = Setting("tcp", .flag, flag: "--tcp")
    public static let hosts = Setting("hosts", .hostNames, flag: "--host")
    public static let allowPrivate = Setting("allowPrivate", .hostPatterns, flag: "--allow-private")
    public static let timeoutMs = Setting("timeoutMs", .positiveInteger, flag: "--timeout-ms")
    public static let expiryWarningDays = Setting("expiryWarningDays", .positiveInteger, flag: "--warn-days")
    public static let watchSeconds = Setting("watchSeconds", .positiveInteger, flag: "--watch")
    public static let json = Setting("json", .flag, flag: "--json")

    /// Every key of `httpdns health`, in the order docs/CLI.md lists them.
    public static let table: [Setting] = [
        servers, serverName, cacert, pins, dns, tcp, hosts, allowPrivate, timeoutMs, expiryWarningDays, watchSeconds, json,
    ]

    /// The probe names asked when none are given: a name every resolver knows.
    public static let defaultHosts = ["example.com"]

    /// The HTTPDNS services, each checked on its own; nil when none are set, or when `servers` are DNS-over-TLS
    /// servers.
    public var service: ServiceConnection?
    /// The DNS-over-TLS servers, each checked on its own, when `servers` are `tls://IP[:PORT]` ones; else nil.
    public var dot: DoTSource.Configuration?
    /// The DNS servers, each checked on its own. Empty: the system's, from `/etc/resolv.conf`.
    public var dnsServers: [DNSServerAddress] = []
    /// How c-ares asks each DNS server.
    public var cares = CAresSource.Configuration()
    /// The names asked of every source.
    public var hosts: [HostName] = []
    /// Names whose private answers are not a hijack (internal services).
    public var allowPrivate = HostPatterns()
    /// How long each probe may take (`timeoutMs`). Default 2000 ms; at most 60000 ms.
    public var timeout: Duration = .milliseconds(2000)
    /// A certificate that expires within this many days makes the service degraded. Default 14.
    public var expiryWarningDays = 14
    /// Repeat the checks this often (`watchSeconds`); nil: once.
    public var watch: Duration?
    public var json = false

    /// Reads every key and checks that the libraries accept what they make.
    /// - Throws: ``SettingError`` naming the key.
    public init(reading reader: SettingsReader) async throws(SettingError) {
        if let value = try await reader.int(Self.timeoutMs) {
            guard value <= 60_000 else { throw SettingError("--timeout-ms (timeoutMs, HTTPDNS_TIMEOUT_MS) must be at most 60000, not \(value)") }
            timeout = .milliseconds(value)
        }
        if try await reader.isGiven(Self.servers) {
            // One kind in the list, never both (`SettingKind.serviceURLs` refuses a mix).
            if try await reader.strings(Self.servers)?.first?.hasPrefix("tls://") == true {
                var configuration = try await reader.library("service") { (config) throws(ConfigurationError) in
                    try await DoTSource.Configuration(configReader: config)
                }
                configuration.budget = timeout
                configuration.attemptTimeout = timeout
                dot = configuration
            } else {
                var connection = try await reader.library("service") { (config) throws(ConfigurationError) in try await ServiceConnection(configReader: config) }
                connection.budget = timeout
                connection.attemptTimeout = timeout
                service = connection
            }
        } else {
            for setting in [Self.serverName, Self.cacert, Self.pins] {
                guard try await !reader.isGiven(setting) else { throw SettingError("--server-name, --cacert and --pin (serverName, cacert, pins) describe a service: name one with --server URL") }
            }
        }
        dnsServers = (try await reader.strings(Self.dns) ?? []).compactMap { try? DNSServerAddress(parsing: $0) }
        if try await reader.bool(Self.tcp) == true { cares.transport = .tcp }
        // c-ares's own timeout per try, doubled on the second: both tries fit in the probe's time (1/3 + 2/3).
        cares.timeout = max(.milliseconds(1), timeout / 3)
        cares.tries = 2
        hosts = (try await reader.strings(Self.hosts) ?? Self.defaultHosts).compactMap { try? HostName($0) }
        guard !hosts.isEmpty else { throw SettingError("--host (hosts, HTTPDNS_HOSTS) must name at least one probe name") }
        do {
            allowPrivate = try HostPatterns(try await reader.strings(Self.allowPrivate) ?? [])
        } catch let error as SettingError {
            throw error
        } catch {
            throw SettingError(.invalidValue, "--allow-private: \(error)", cause: error)
        }
        if let value = try await reader.int(Self.expiryWarningDays) { expiryWarningDays = value }
        if let seconds = try await reader.int(Self.watchSeconds) {
            guard seconds <= 86_400 else {
                throw SettingError("--watch (watchSeconds, HTTPDNS_WATCH_SECONDS) must be at most 86400 seconds (a day), not \(seconds)")
            }
            watch = .seconds(seconds)
        }
        json = try await reader.bool(Self.json) ?? false
        do {
            try cares.validate()
        } catch {
            throw SettingError(.invalidValue, "--timeout-ms \(error.reason)", cause: error)
        }
    }
}
