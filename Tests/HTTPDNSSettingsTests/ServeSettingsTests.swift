import FoundationEssentials
import Glibc
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSSettings
import Testing

/// `httpdns serve`'s settings: one table, three places, each value checked where it is read.
@Suite struct ServeSettingsTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A file holding `text`, removed after `body`.
    func withFile<T>(_ text: String, _ body: (String) async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-settings-\(UUID().uuidString).json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(path)
    }

    func settings(file: String? = nil, environment: [String: String] = [:], flags: [String: [String]] = [:]) async throws -> ServeSettings {
        try await ServeSettings(reading: SettingsReader(settings: ServeSettings.table, file: file, environment: environment, flags: flags))
    }

    func error(file: String? = nil, environment: [String: String] = [:], flags: [String: [String]] = [:]) async -> String {
        do {
            _ = try await settings(file: file, environment: environment, flags: flags)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    /// docs/SERVICE.md's configuration table lists exactly the keys of the table, with their variables and flags.
    @Test func theServiceDocumentationListsEveryKeyAndNoOther() throws {
        try Self.expectDocumented(ServeSettings.table, in: "docs/SERVICE.md")
    }

    /// The settings tables of `document` (rows of file key, variable, flag) list exactly the keys of `table`; only
    /// those under the heading `section` (up to the next heading of its level) when one is named.
    static func expectDocumented(_ table: [Setting], in document: String, section: String? = nil) throws {
        var text = try String(contentsOf: Self.repository.appendingPathComponent(document), encoding: .utf8)
        if let section {
            let start = try #require(text.range(of: "\n\(section)\n"), "no heading '\(section)' in \(document)")
            let level = section.prefix { $0 == "#" }
            let rest = text[start.upperBound...]
            let end = rest.range(of: "\n\(level) ")?.lowerBound ?? rest.endIndex
            text = String(rest[..<end])
        }
        var documented: [String: (environment: String, flag: String?)] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 4, cells[1].hasPrefix("`"), cells[2].hasPrefix("`HTTPDNS_") else { continue }
            let key = String(cells[1].dropFirst().prefix { $0 != "`" })
            let variable = String(cells[2].dropFirst().prefix { $0 != "`" })
            let flag = cells[3].hasPrefix("`--") ? String(cells[3].dropFirst().prefix { $0 != " " && $0 != "`" }) : nil
            documented[key] = (variable, flag)
        }
        #expect(Set(documented.keys) == Set(table.map(\.key)), "\(document)")
        for setting in table {
            #expect(documented[setting.key]?.environment == setting.environmentVariable, "\(setting.key)")
            #expect(documented[setting.key]?.flag == setting.flag, "\(setting.key)")
        }
    }

    /// The example file in deploy/ sets every key but those of plain DNS upstreams (its upstreams are DNS over TLS,
    /// which refuses them), and every value in it is valid.
    @Test func theExampleFileSetsEveryKeyValidly() async throws {
        let path = Self.repository.appendingPathComponent("deploy/httpdns.json").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for setting in ServeSettings.table where !["upstreamTCP", "upstreamTimeoutMs", "upstreamTries"].contains(setting.key) {
            #expect(text.contains("\"\(setting.key)\""), "\(setting.key)")
        }
        #expect(text.contains("\"tls://"), "the example's upstreams are DNS over TLS")
        // Every value is read and checked; the TLS files, placeholders for a real host, are the last check and the
        // only one that fails here.
        let error = await self.error(file: path)
        #expect(error.hasPrefix("cannot read /etc/httpdns/tls/cert.pem"), "\(error)")
    }

    @Test func variablesAreTheKeysInUpperSnakeCase() {
        let names = Dictionary(uniqueKeysWithValues: ServeSettings.table.map { ($0.key, $0.environmentVariable) })
        #expect(names["upstreamTCP"] == "HTTPDNS_UPSTREAM_TCP")
        #expect(names["maxURLLength"] == "HTTPDNS_MAX_URL_LENGTH")
        #expect(names["maxDNSMessageBytes"] == "HTTPDNS_MAX_DNS_MESSAGE_BYTES")
        #expect(names["cacheMinTTLSeconds"] == "HTTPDNS_CACHE_MIN_TTL_SECONDS")
        #expect(names["upstreamTimeoutMs"] == "HTTPDNS_UPSTREAM_TIMEOUT_MS")
        #expect(names["accounts"] == "HTTPDNS_ACCOUNTS_FILE")
        #expect(names["upstreamCACert"] == "HTTPDNS_UPSTREAM_CACERT")
        #expect(names["upstreamPins"] == "HTTPDNS_UPSTREAM_PINS")
    }

    @Test func unsetKeysKeepTheLibrariesDefaults() async throws {
        let settings = try await settings()
        #expect(settings.server.port == HTTPDNSServerConfiguration().port && settings.server.host == "127.0.0.1")
        #expect(settings.upstream == CAresSource.Configuration())
        #expect(Self.kinds(settings) == ["plain"], "plain DNS unless an upstream is encrypted")
        #expect(settings.cache.maxEntries == ResolverCache.Configuration().maxEntries)
        #expect(settings.logLevel == "info")
    }

    /// Flags over the environment over the file, key by key; a value overridden is never read, so a bad one there
    /// does not matter.
    @Test func precedenceIsFlagsThenEnvironmentThenFile() async throws {
        let file = #"{"maxHostsPerBatch": 1, "maxURLLength": 100, "listen": "not an address", "upstreamTCP": true, "upstream": ["127.0.0.9"]}"#
        let settings = try await withFile(file) { path in
            try await self.settings(
                file: path,
                environment: ["HTTPDNS_MAX_HOSTS_PER_BATCH": "2", "HTTPDNS_LISTEN": "nonsense", "HTTPDNS_UPSTREAM_TCP": "false"],
                flags: ["listen": ["127.0.0.1:9"], "upstream": ["127.0.0.2:5353", "[::1]"]]
            )
        }
        #expect(settings.server.maxHostsPerBatch == 2)
        #expect(settings.server.maxURLLength == 100)
        #expect(settings.server.port == 9)
        #expect(settings.upstream.transport == .udp)
        #expect(settings.upstream.servers.map(\.description) == ["127.0.0.2:5353", "[::1]:53"])
    }

    @Test func fileValuesMayBeNumbersOrStringsHoldingThem() async throws {
        let settings = try await withFile(#"{"maxHostsPerBatch": "3", "rateLimitPerSecond": 2.5, "cacheMaxTTLSeconds": 60, "upstream": "127.0.0.3"}"#) {
            try await self.settings(file: $0)
        }
        #expect(settings.server.maxHostsPerBatch == 3 && settings.server.rateLimitPerSecond == 2.5)
        #expect(settings.cache.maxTTL == .seconds(60))
        #expect(settings.upstream.servers.map(\.description) == ["127.0.0.3:53"])
    }

    /// Each bad value is named by where it came from.
    @Test func errorsNameTheKeyAndWhereTheValueCameFrom() async throws {
        try await withFile(#"{"maxHostsPerBatch": true}"#) { path in
            #expect(await error(file: path) == "\(path): key 'maxHostsPerBatch' must be a positive whole number, not a boolean")
        }
        try await withFile(#"{"listen": "127.0.0.1:0", "maxHostsPerBach": 3}"#) { path in
            #expect(await error(file: path).hasPrefix("\(path): unknown key 'maxHostsPerBach' (known keys: listen, "))
        }
        try await withFile(#"{"cacheMaxStaleSeconds": 1.5}"#) { path in
            #expect(await error(file: path).contains("key 'cacheMaxStaleSeconds' must be a whole number of seconds"))
        }
        try await withFile(#"{"a": 1, "a": 2}"#) { path in
            #expect(await error(file: path).contains("is not valid JSON"))
        }
        try await withFile(#"[1]"#) { path in
            #expect(await error(file: path).contains("is not a JSON object"))
        }
        #expect(await error(file: "/nonexistent/httpdns.json").hasPrefix("cannot read the configuration file /nonexistent/httpdns.json"))
        #expect(await error(environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "-1"]) == "environment variable HTTPDNS_RATE_LIMIT_PER_SECOND must be a number ≥ 0, not '-1'")
        #expect(await error(environment: ["HTTPDNS_UPSTREAM_TCP": "maybe"]) == "environment variable HTTPDNS_UPSTREAM_TCP must be true or false (or 1 or 0), not 'maybe'")
        #expect(await error(environment: ["HTTPDNS_UPSTREAM": "127.0.0.1,dns.example"]).contains("environment variable HTTPDNS_UPSTREAM holds a server that cannot be used"))
        #expect(await error(flags: ["listen": ["nonsense"]]) == "--listen must be HOST:PORT (for IPv6, [ADDRESS]:PORT), not 'nonsense'")
        #expect(await error(flags: ["logLevel": ["loud"]]).hasPrefix("--log-level must be trace, debug, info, notice, warning, error or critical"))
    }

    /// A file a setting names is read only if it is a regular file of at most 1 MiB: /dev/zero, a FIFO or a huge
    /// file is refused at once, saying why, instead of hanging or filling memory.
    @Test(.timeLimit(.minutes(1))) func settingsFilesMustBeSmallRegularFiles() async throws {
        #expect(await error(file: "/dev/zero") == "cannot read the configuration file /dev/zero: it is not a regular file")
        #expect(await error(environment: ["HTTPDNS_ACCOUNTS_FILE": "/dev/zero"]).contains("cannot read accounts from /dev/zero (a JSON object of accounts): it is not a regular file"))
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-fifo-\(UUID().uuidString)").path
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        #expect(await error(file: fifo).hasSuffix("it is not a regular file"))
        try await withFile(String(repeating: " ", count: (1 << 20) - 1) + "{}") { path in
            #expect(await error(file: path).hasSuffix("it is larger than 1048576 bytes (1048577)"))
        }
        try await withFile(String(repeating: " ", count: (1 << 20) - 2) + "{}") { path in
            #expect(await error(file: path) == "no error", "exactly 1 MiB is allowed")
        }
    }

    /// What the libraries refuse is reported under the key a user writes.
    @Test func libraryChecksAreReportedUnderTheUsersKeys() async throws {
        let clamps = await error(environment: ["HTTPDNS_CACHE_MIN_TTL_SECONDS": "600", "HTTPDNS_CACHE_MAX_TTL_SECONDS": "60"])
        #expect(clamps.hasPrefix("cacheMinTTLSeconds (600 s) is larger than"), "\(clamps)")
        #expect(clamps.hasSuffix("cacheMaxTTLSeconds (60 s)"), "the other key is the user's too: \(clamps)")
        try await withFile("not PEM") { path in
            #expect(await error(flags: ["tlsCert": [path]]).hasPrefix("tlsKey is missing"))
            #expect(await error(flags: ["tlsKey": [path]]).hasPrefix("tlsCert is missing"))
            #expect(await error(flags: ["tlsCert": [path], "tlsKey": [path]]).contains("tlsCert \(path) is not a PEM"))
        }
        #expect(await error(flags: ["tlsCert": ["/nonexistent/cert.pem"], "tlsKey": ["/nonexistent/key.pem"]]).hasPrefix("cannot read /nonexistent/cert.pem"))
    }

    @Test func accountsAreCheckedStrictlyAndSecretsNeverEchoed() async throws {
        let good = #"{"accounts": {"app": {"secret": "s3cret", "requireSignature": false}, "old": {"secret": "x", "allowMD5Signature": true}}}"#
        let settings = try await withFile(good) { try await self.settings(file: $0) }
        #expect(settings.server.accounts["app"] == .init(secret: "s3cret", requireSignature: false, allowMD5Signature: false))
        #expect(settings.server.accounts["old"] == .init(secret: "x", requireSignature: true, allowMD5Signature: true))
        for (entry, fragment) in [
            (#"{"accounts": {"app": {"secret": "x", "requireSignatur": false}}}"#, "unknown key 'requireSignatur'"),
            (#"{"accounts": {"app": {"secret": "x", "requireSignature": "false"}}}"#, "key 'requireSignature' must be true or false"),
            (#"{"accounts": {"app": {"secret": ""}}}"#, "needs a non-empty \"secret\""),
            (#"{"accounts": {"a/b": {"secret": "x"}}}"#, "account id 'a/b'"),
            (#"{"accounts": 5}"#, "must be an object of accounts"),
        ] {
            try await withFile(entry) { path in
                let message = await error(file: path)
                #expect(message.contains(fragment), "\(message)")
            }
        }
        // The accounts file named by the environment.
        try await withFile(#"{"ci": {"secret": "from-file"}}"#) { accountsPath in
            let settings = try await self.settings(environment: ["HTTPDNS_ACCOUNTS_FILE": accountsPath])
            #expect(settings.server.accounts["ci"]?.secret == "from-file")
        }
        #expect(await error(environment: ["HTTPDNS_ACCOUNTS_FILE": "/nonexistent/accounts.json"]).contains("cannot read accounts from /nonexistent/accounts.json"))
    }

    /// The upstream list: comma-separated in the environment (empty entries skipped, so an empty value means the
    /// system's resolvers), one server per string in the file and per flag.
    @Test func upstreamListsFromEachPlace() async throws {
        #expect(try await settings(environment: ["HTTPDNS_UPSTREAM": ""]).upstream.servers.isEmpty)
        #expect(try await settings(environment: ["HTTPDNS_UPSTREAM": "127.0.0.5,,127.0.0.6:54,"]).upstream.servers.map(\.description) == ["127.0.0.5:53", "127.0.0.6:54"])
        #expect(await error(flags: ["upstream": ["127.0.0.5,127.0.0.6"]]).contains("--upstream holds a server that cannot be used"))
        try await withFile(#"{"upstream": "127.0.0.5,127.0.0.6"}"#) { path in
            #expect(await error(file: path).contains("key 'upstream' holds a server that cannot be used"))
        }
    }

    static let pin = "sha256//" + String(repeating: "A", count: 43) + "="
    static let otherPin = "sha256//" + String(repeating: "B", count: 42) + "A="

    /// The kinds of `settings.upstreams`, in order: `plain`, `dot`, `doh`.
    static func kinds(_ settings: ServeSettings) -> [String] {
        settings.upstreams.map {
            switch $0 {
            case .plain: "plain"
            case .dot: "dot"
            case .doh: "doh"
            }
        }
    }

    /// The DNS-over-TLS sources of `settings`, in order.
    static func dot(_ settings: ServeSettings) -> [DoTSource.Configuration] {
        settings.upstreams.compactMap {
            if case .dot(let configuration) = $0 { configuration } else { nil }
        }
    }

    /// The DNS-over-HTTPS sources of `settings`, in order.
    static func doh(_ settings: ServeSettings) -> [DoHSource.Configuration] {
        settings.upstreams.compactMap {
            if case .doh(let configuration) = $0 { configuration } else { nil }
        }
    }

    /// `tls://IP[:PORT]#NAME` upstreams make one DNS-over-TLS source, with the trust file and pins, from each place;
    /// c-ares is not used.
    @Test func tlsUpstreamsMakeOneDoTSource() async throws {
        try await withFile("PEM placeholder") { cacert in
            let fromFlags = try await settings(flags: [
                "upstream": ["tls://127.0.0.1#DNS.Example.", "tls://[::1]:8853#dns.example"],
                "upstreamCACert": [cacert],
                "upstreamPins": [Self.pin, Self.otherPin],
            ])
            #expect(Self.kinds(fromFlags) == ["dot"])
            let dot = try #require(Self.dot(fromFlags).first)
            #expect(dot.servers.map(\.description) == ["tls://127.0.0.1", "tls://[::1]:8853"])
            #expect(dot.serverName == "dns.example", "normalised: lower case, no trailing dot")
            #expect(dot.extraTrustRootsPEMFile == cacert)
            #expect(dot.pins.map(\.description) == [Self.pin, Self.otherPin])
            #expect(dot.name == "dot")
            #expect(fromFlags.upstream.servers.isEmpty)

            let fromEnvironment = Self.dot(
                try await settings(environment: [
                    "HTTPDNS_UPSTREAM": "tls://127.0.0.2:853#dns.example, tls://127.0.0.3#dns.example",
                    "HTTPDNS_UPSTREAM_CACERT": cacert,
                    "HTTPDNS_UPSTREAM_PINS": "\(Self.pin),\(Self.otherPin)",
                ])
            )
            #expect(fromEnvironment.count == 1 && fromEnvironment.first?.servers.map(\.description) == ["tls://127.0.0.2", "tls://127.0.0.3"])
            #expect(fromEnvironment.first?.extraTrustRootsPEMFile == cacert && fromEnvironment.first?.pins.count == 2)

            try await withFile(#"{"upstream": ["tls://127.0.0.4:8853#dns.example"], "upstreamCACert": "\#(cacert)", "upstreamPins": "\#(Self.pin)"}"#) {
                let fromFile = Self.dot(try await self.settings(file: $0))
                #expect(fromFile.first?.servers.map(\.description) == ["tls://127.0.0.4:8853"])
                #expect(fromFile.first?.pins.map(\.description) == [Self.pin])
            }
        }
        // Without #NAME, the certificate must hold the address; the system's roots when no file is named.
        let byAddress = try #require(Self.dot(try await settings(environment: ["HTTPDNS_UPSTREAM": "tls://192.0.2.53"])).first)
        #expect(byAddress.serverName == nil && byAddress.extraTrustRootsPEMFile == nil && byAddress.pins.isEmpty)
        // A flag still replaces the environment's list whole, of either kind.
        let replaced = try await settings(environment: ["HTTPDNS_UPSTREAM": "tls://192.0.2.53#dns.example"], flags: ["upstream": ["127.0.0.9"]])
        #expect(Self.kinds(replaced) == ["plain"] && replaced.upstream.servers.map(\.description) == ["127.0.0.9:53"])
    }

    /// `https://IP[:PORT][/PATH]#NAME` upstreams make one DNS-over-HTTPS source, with the trust file and pins; the
    /// path is kept as written (the source asks `/dns-query` where none is).
    @Test func httpsUpstreamsMakeOneDoHSource() async throws {
        try await withFile("PEM placeholder") { cacert in
            let settings = try await settings(flags: [
                "upstream": ["https://127.0.0.1/query#DNS.Example.", "https://[::1]:8443#dns.example"],
                "upstreamCACert": [cacert],
                "upstreamPins": [Self.pin],
            ])
            #expect(Self.kinds(settings) == ["doh"])
            let doh = try #require(Self.doh(settings).first)
            #expect(doh.connection.servers.map(\.description) == ["https://127.0.0.1/query", "https://[::1]:8443"])
            #expect(doh.connection.serverName == "dns.example" && doh.connection.extraTrustRootsPEMFile == cacert)
            #expect(doh.connection.pins.map(\.description) == [Self.pin] && doh.name == "doh")
            let fromEnvironment = try await self.settings(environment: ["HTTPDNS_UPSTREAM": "https://192.0.2.53"])
            #expect(Self.doh(fromEnvironment).first?.connection.serverName == nil, "without #NAME the certificate must hold the address")
        }
    }

    /// Kinds mix: one source per kind and certificate name, in the order their first servers are listed, each named
    /// for its name when its kind has several; every plain server goes to the one c-ares source.
    @Test func mixedUpstreamsMakeASourceEachInOrder() async throws {
        let settings = try await settings(flags: [
            "upstream": [
                "tls://127.0.0.1#a.example", "https://127.0.0.2#a.example", "127.0.0.3", "tls://127.0.0.4#b.example",
                "tls://127.0.0.5#a.example", "127.0.0.6:5353", "tls://127.0.0.7",
            ]
        ])
        #expect(Self.kinds(settings) == ["dot", "doh", "plain", "dot", "dot"])
        let dot = Self.dot(settings)
        #expect(dot.map(\.name) == ["dot#a.example", "dot#b.example", "dot#(address)"])
        #expect(dot.map { $0.servers.map(\.description) } == [["tls://127.0.0.1", "tls://127.0.0.5"], ["tls://127.0.0.4"], ["tls://127.0.0.7"]])
        #expect(dot.map(\.serverName) == ["a.example", "b.example", nil])
        #expect(Self.doh(settings).map(\.name) == ["doh"], "the only DoH source keeps the kind's name")
        #expect(settings.upstream.servers.map(\.description) == ["127.0.0.3:53", "127.0.0.6:5353"])
        // With a plain server among them, its settings apply.
        let tcp = try await self.settings(flags: ["upstream": ["tls://127.0.0.1#a.example", "127.0.0.3"], "upstreamTCP": ["true"]])
        #expect(tcp.upstream.transport == .tcp && Self.kinds(tcp) == ["dot", "plain"])
    }

    /// What cannot go with the encrypted upstreams is refused, saying why.
    @Test func encryptedUpstreamsRefuseWhatCannotWork() async throws {
        // The settings of plain DNS, from whichever place, when every upstream is encrypted.
        let tls = ["upstream": ["tls://127.0.0.1#dns.example", "https://127.0.0.2#dns.example"]]
        #expect(
            await error(flags: tls.merging(["upstreamTCP": ["true"]]) { $1 })
                == "--upstream-tcp (upstreamTCP, HTTPDNS_UPSTREAM_TCP) applies to plain DNS upstreams (c-ares), and every upstream is encrypted"
        )
        #expect(
            await error(environment: ["HTTPDNS_UPSTREAM_TIMEOUT_MS": "500", "HTTPDNS_UPSTREAM_TRIES": "3"], flags: tls)
                == "upstreamTimeoutMs (HTTPDNS_UPSTREAM_TIMEOUT_MS) and upstreamTries (HTTPDNS_UPSTREAM_TRIES) apply to plain DNS upstreams (c-ares), "
                + "and every upstream is encrypted"
        )
        try await withFile(#"{"upstreamTCP": false}"#) { path in
            #expect(await error(file: path, flags: tls).hasPrefix("--upstream-tcp (upstreamTCP, HTTPDNS_UPSTREAM_TCP) applies to plain DNS"))
        }

        // The settings of encrypted upstreams, without one.
        #expect(
            await error(flags: ["upstream": ["127.0.0.1"], "upstreamPins": [Self.pin]])
                == "--upstream-pin (upstreamPins, HTTPDNS_UPSTREAM_PINS) applies to encrypted upstreams "
                + "(--upstream tls://IP[:PORT][#NAME] or https://IP[:PORT][/PATH][#NAME]), but the upstreams are plain DNS"
        )
        let noUpstream = await error(environment: ["HTTPDNS_UPSTREAM_CACERT": "/etc/hosts", "HTTPDNS_UPSTREAM_PINS": Self.pin])
        #expect(noUpstream.hasPrefix("--upstream-cacert (upstreamCACert, HTTPDNS_UPSTREAM_CACERT) and --upstream-pin"), "\(noUpstream)")
        #expect(noUpstream.hasSuffix("but no upstream is set, so the system's resolvers are asked over plain DNS"), "\(noUpstream)")

        // Files and pins, for either kind.
        for upstream in ["tls://127.0.0.1#dns.example", "https://127.0.0.1#dns.example"] {
            #expect(
                await error(flags: ["upstream": [upstream], "upstreamCACert": ["/nonexistent/ca.pem"]])
                    == "cannot read /nonexistent/ca.pem, the file of --upstream-cacert (upstreamCACert, HTTPDNS_UPSTREAM_CACERT)"
            )
            let badPin = await error(environment: ["HTTPDNS_UPSTREAM_PINS": "sha256//short"], flags: ["upstream": [upstream]])
            #expect(badPin.hasPrefix("environment variable HTTPDNS_UPSTREAM_PINS holds a pin that cannot be used"), "\(badPin)")
        }
    }

    /// Each upstream that cannot be used is refused with what is wrong with it, and where it came from.
    @Test func badUpstreamsAreNamedPrecisely() async throws {
        for (text, reason) in [
            ("tls://dns.example#dns.example", "'dns.example' is not an IP address: an upstream is given by IP"),
            ("tls://dns.example", "the name the certificate holds goes after #: tls://IP[:PORT]#NAME"),
            ("tls://127.0.0.1#", "nothing follows #"),
            ("tls://127.0.0.1#bad_name", "'bad_name' after # is not a host name"),
            ("tls://127.0.0.1#192.0.2.1", "'192.0.2.1' after # is an address, not a name"),
            ("tls://127.0.0.1:0#dns.example", "'0' is not a port (1 to 65535)"),
            ("tls://127.0.0.1/dns-query", "DNS over TLS has no path"),
            ("tls://::1", "an IPv6 address goes in brackets"),
            ("127.0.0.1#dns.example", "#NAME is for an encrypted upstream: write tls://IP[:PORT]#NAME or https://IP[:PORT][/PATH]#NAME"),
            ("quic://127.0.0.1", "'quic://' is not an upstream: write IP[:PORT] for plain DNS, tls://IP[:PORT][#NAME] for DNS over TLS or https://"),
            ("http://127.0.0.1", "DNS over plain HTTP is not encrypted: write https://IP[:PORT][/PATH][#NAME], or IP[:PORT] for plain DNS"),
            ("https://dns.example/dns-query#dns.example", "'dns.example' is not an IP address: an upstream is given by IP"),
            ("https://dns.example", "the name the certificate holds goes after #: https://IP[:PORT]#NAME"),
            ("https://127.0.0.1/dns-query?x=1#dns.example", "must not have a query or a fragment"),
            ("https://2001:db8::53#dns.example", "an IPv6 address goes in brackets: https://[2001:db8::53]"),
            ("https://127.0.0.1#", "nothing follows #"),
            ("https://127.0.0.1/a;b,c#dns.example", "a comma cannot be in an upstream"),
            ("dns.example", "is not an IPv4 or IPv6 address (a DNS server is given by IP, never by name); for an encrypted upstream"),
            ("127.0.0.1:99999", "is not a port number"),
        ] {
            let message = await error(flags: ["upstream": [text]])
            #expect(message.hasPrefix("--upstream holds a server that cannot be used: invalid upstream '\(text)': "), "\(message)")
            #expect(message.contains(reason), "\(text): \(message)")
            let fromEnvironment = await error(environment: ["HTTPDNS_UPSTREAM": text])
            #expect(fromEnvironment.hasPrefix("environment variable HTTPDNS_UPSTREAM holds a server that cannot be used"), "\(fromEnvironment)")
        }
        try await withFile(#"{"upstream": [53]}"#) { path in
            #expect(await error(file: path) == "\(path): key 'upstream' must be a list of strings, not a number in it")
        }
    }

    @Test func wholeNumbersAreWholeNumbers() async throws {
        for text in ["1e3", "5.0", "0x10", " 5"] {
            #expect(await error(environment: ["HTTPDNS_MAX_HOSTS_PER_BATCH": text]).contains("must be a positive whole number"), "\(text)")
        }
        try await withFile(#"{"maxHostsPerBatch": null}"#) { path in
            #expect(await error(file: path).contains("must be a positive whole number, not null"))
        }
    }

    @Test func aFileThatIsNotJSONIsReportedWithoutQuotingIt() async throws {
        try await withFile(#"{"accounts": {"app": {"secret": "s3cr"et"}}}"#) { path in
            let message = await error(file: path)
            #expect(message.contains("is not valid JSON: invalid JSON at byte"), "\(message)")
            #expect(!message.contains("'e'") && !message.contains("s3cr"), "\(message)")
        }
    }

    @Test func aBurstBelowOneIsRaisedToOne() async throws {
        #expect(try await settings(environment: ["HTTPDNS_RATE_LIMIT_BURST": "0.5"]).server.rateLimitBurst == 1)
    }
}
