import HTTPDNSClient
import HTTPDNSCore
import Testing

/// HTTPDNSClient's errors follow docs/API-CONVENTIONS.md: a struct code callers branch on, a message for people, and
/// the error underneath as a `cause` that equality ignores.
@Suite struct ClientErrorCodeTests {
    @Test(arguments: [
        ("ftp://127.0.0.1", ServiceEndpointError.Code.invalidScheme),
        ("127.0.0.1", .invalidScheme),
        ("https://dns.example", .invalidAddress),
        ("https://[::1", .invalidAddress),
        ("https://::1", .invalidAddress),
        ("https://127.0.0.1:0", .invalidPort),
        ("https://127.0.0.1:https", .invalidPort),
        ("https://[::1]x", .invalidPort),
        ("https://127.0.0.1/?x=1", .invalidPath),
        ("https://127.0.0.1/#top", .invalidPath),
        ("https://127.0.0.1/dns query", .invalidPath),
    ])
    func aServiceURLThatCannotBeUsedSaysWhichPart(text: String, code: ServiceEndpointError.Code) {
        let error = #expect(throws: ServiceEndpointError.self) { try ServiceEndpoint(parsing: text) }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.text == text)
    }

    @Test func aServiceEndpointErrorKeepsItsCauseOutOfEquality() {
        let withCause = ServiceEndpointError(.invalidPort, text: "x", reason: "y", cause: CancellationError())
        let without = ServiceEndpointError(.invalidPort, text: "x", reason: "y")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
        #expect(without.description == "invalid service URL 'x': y")
    }

    @Test func aSourceSaysWhatKindOfSettingCannotWork() throws {
        func error(_ change: (inout NativeServiceSource.Configuration) throws -> Void) rethrows -> ConfigurationError? {
            var configuration = NativeServiceSource.Configuration(servers: [try! ServiceEndpoint(parsing: "https://127.0.0.1")])
            try change(&configuration)
            return #expect(throws: ConfigurationError.self) { try NativeServiceSource(configuration: configuration) }
        }
        #expect(error { $0.connection.servers = [] }?.code == .invalidValue)
        #expect(error { $0.connection.budget = .zero }?.code == .outOfRange)
        #expect(error { $0.connection.coolDown = .seconds(-1) }?.code == .outOfRange)
        let coolDown = error {
            $0.connection.coolDown = .seconds(120)
            $0.connection.maxCoolDown = .seconds(60)
        }
        #expect(coolDown?.code == .inconsistent && coolDown?.key == "coolDown")
        let pin = try error {
            $0.connection.servers = [try ServiceEndpoint(parsing: "http://127.0.0.1")]
            $0.connection.pins = [try SPKIPin(parsing: "sha256//" + String(repeating: "A", count: 43) + "=")]
        }
        #expect(pin?.code == .inconsistent && pin?.key == "pin")
        let cacert = error { $0.connection.extraTrustRootsPEMFile = "/nonexistent/ca.pem" }
        #expect(cacert?.code == .unreadable && cacert?.key == "cacert")
        #expect(cacert?.cause != nil, "the TLS library's error is kept")
    }

    @Test func aPinThatIsNotOneIsAnInvalidValue() {
        let error = #expect(throws: ConfigurationError.self) { try SPKIPin(parsing: "sha256//short") }
        #expect(error?.code == .invalidValue && error?.key == "pin")
    }

    @Test func everyCodeIsListedOnceWithItsOwnWord() {
        let all = ServiceEndpointError.Code.all
        #expect(all.count == 4)
        #expect(Set(all.map(\.description)) == ["invalid_scheme", "invalid_address", "invalid_port", "invalid_path"])
    }
}
