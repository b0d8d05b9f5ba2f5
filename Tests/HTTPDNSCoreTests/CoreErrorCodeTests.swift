import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// HTTPDNSCore's public errors follow docs/API-CONVENTIONS.md: a struct code callers branch on, a message for people,
/// and the error underneath as a `cause` that equality ignores.
@Suite struct CoreErrorCodeTests {
    // MARK: ConfigurationError

    @Test func configurationErrorsSayWhatKindOfProblemTheyAre() throws {
        func error(_ change: (inout ResolverCache.Configuration) -> Void) -> ConfigurationError? {
            var configuration = ResolverCache.Configuration()
            change(&configuration)
            return #expect(throws: ConfigurationError.self) { try configuration.validate() }
        }
        #expect(error { $0.maxEntries = 0 }?.code == .outOfRange)
        #expect(error { $0.refreshAheadFraction = 1.5 }?.code == .outOfRange)
        let inconsistent = error {
            $0.minTTL = .seconds(10)
            $0.maxTTL = .seconds(5)
        }
        #expect(inconsistent?.code == .inconsistent && inconsistent?.key == "minTTL")
        #expect(#expect(throws: ConfigurationError.self) { try IPRange(parsing: "10.0.0.0/33") }?.code == .outOfRange)
        #expect(#expect(throws: ConfigurationError.self) { try IPRange(parsing: "ten/8") }?.code == .invalidValue)
        #expect(#expect(throws: ConfigurationError.self) { try HostPatterns(["not a name"]) }?.code == .invalidValue)
    }

    @Test func theOldInitialiserStillMakesAnInvalidValueWithoutACause() {
        let error = ConfigurationError(key: "timeout", reason: "must be positive")
        #expect(error.code == .invalidValue)
        #expect(error.cause == nil)
        #expect(error.description == "timeout must be positive")
        #expect(error == ConfigurationError(.invalidValue, key: "timeout", reason: "must be positive"))
        #expect(error != ConfigurationError(.outOfRange, key: "timeout", reason: "must be positive"))
    }

    @Test func aConfigurationErrorKeepsItsCauseOutOfEquality() {
        let withCause = ConfigurationError(.unreadable, key: "cacert", reason: "/x.pem cannot be read", cause: CancellationError())
        let without = ConfigurationError(.unreadable, key: "cacert", reason: "/x.pem cannot be read")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without)
        #expect(withCause.hashValue == without.hashValue)
        #expect(Set([withCause, without]).count == 1)
    }

    @Test func aLookupAtNoConcurrencyIsOutOfRange() async throws {
        let cache = try ResolverCache(source: StaticSource())
        let error = await #expect(throws: ConfigurationError.self) {
            try await cache.preResolve([try HostName("a.example")], concurrency: 0)
        }
        #expect(error?.code == .outOfRange && error?.key == "concurrency")
    }

    // MARK: HostNameError

    static let badNames: [(String, HostNameError.Code)] = [
        ("", .empty),
        (".", .empty),
        (String(repeating: "abcdefghi.", count: 29) + "abcdefghij", .tooLong),
        ("a..example", .emptyLabel),
        (".example", .emptyLabel),
        (String(repeating: "a", count: 64) + ".example", .labelTooLong),
        ("-a.example", .invalidHyphen),
        ("a-.example", .invalidHyphen),
        ("a_b.example", .invalidCharacter),
        ("a b.example", .invalidCharacter),
        ("bücher.example", .invalidCharacter),
        ("192.168.0.1", .ipAddress),
        ("host.123", .ipAddress),
    ]

    @Test(arguments: badNames)
    func aBadHostNameSaysWhichRuleItBroke(name: String, code: HostNameError.Code) {
        let error = #expect(throws: HostNameError.self) { try HostName(name) }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.name == name)
        #expect(error?.cause == nil)
    }

    @Test func aThreeHundredCharacterNameIsTooLong() {
        let name = String(repeating: "abcdefghi.", count: 29) + "abcdefghij"
        #expect(name.count == 300)
        let error = #expect(throws: HostNameError.self) { try HostName(name) }
        #expect(error?.code == .tooLong)
        #expect(error?.description.hasPrefix("invalid host name '") == true)
    }

    @Test func aHostNameErrorKeepsItsCauseOutOfEquality() {
        let withCause = HostNameError(.invalidCharacter, name: "a_b", reason: "'_' is not allowed", cause: CancellationError())
        let without = HostNameError(.invalidCharacter, name: "a_b", reason: "'_' is not allowed")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
        #expect(withCause != HostNameError(.ipAddress, name: "a_b", reason: "'_' is not allowed"))
    }

    // MARK: DNSServerAddressError

    @Test(arguments: [
        ("dns.example", DNSServerAddressError.Code.invalidAddress),
        ("[2001:db8::53", .invalidAddress),
        ("300.1.1.1", .invalidAddress),
        ("192.0.2.53:0", .invalidPort),
        ("192.0.2.53:65536", .invalidPort),
        ("192.0.2.53:dns", .invalidPort),
        ("[2001:db8::53]53", .invalidPort),
    ])
    func aBadDNSServerAddressSaysWhichPartIsWrong(text: String, code: DNSServerAddressError.Code) {
        let error = #expect(throws: DNSServerAddressError.self) { try DNSServerAddress(parsing: text) }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.text == text)
    }

    @Test func aDNSServerAddressErrorKeepsItsCauseOutOfEquality() {
        let withCause = DNSServerAddressError(.invalidPort, text: "x", reason: "y", cause: CancellationError())
        let without = DNSServerAddressError(.invalidPort, text: "x", reason: "y")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
    }

    // MARK: Codes

    @Test func everyCodeIsListedOnceWithItsOwnWord() {
        expectStableCodes(ConfigurationError.Code.all, count: 4)
        expectStableCodes(HostNameError.Code.all, count: 7)
        expectStableCodes(DNSServerAddressError.Code.all, count: 2)
        #expect(ConfigurationError.Code.outOfRange.description == "out_of_range")
        #expect(HostNameError.Code.tooLong.description == "too_long")
        #expect(DNSServerAddressError.Code.invalidPort.description == "invalid_port")
    }
}

/// `all` holds `count` different codes, each written as its own snake-case word.
private func expectStableCodes<Code: Hashable & CustomStringConvertible>(
    _ all: [Code],
    count: Int,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(all.count == count, sourceLocation: sourceLocation)
    #expect(Set(all).count == count, sourceLocation: sourceLocation)
    #expect(Set(all.map(\.description)).count == count, sourceLocation: sourceLocation)
    for code in all {
        let word = code.description
        let isSnakeCase = word.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }
        #expect(!word.isEmpty && isSnakeCase, "\(word)", sourceLocation: sourceLocation)
    }
}
