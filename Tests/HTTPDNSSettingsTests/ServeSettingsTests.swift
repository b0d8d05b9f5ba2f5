import FoundationEssentials
import Glibc
import HTTPDNSCAres
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

    /// The example file in deploy/ sets every key, and every value in it is valid.
    @Test func theExampleFileSetsEveryKeyValidly() async throws {
        let path = Self.repository.appendingPathComponent("deploy/httpdns.json").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for setting in ServeSettings.table { #expect(text.contains("\"\(setting.key)\""), "\(setting.key)") }
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
    }

    @Test func unsetKeysKeepTheLibrariesDefaults() async throws {
        let settings = try await settings()
        #expect(settings.server.port == HTTPDNSServerConfiguration().port && settings.server.host == "127.0.0.1")
        #expect(settings.upstream == CAresSource.Configuration())
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
