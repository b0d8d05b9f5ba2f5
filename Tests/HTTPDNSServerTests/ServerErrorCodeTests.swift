import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTesting
import Testing

/// HTTPDNSServer's errors follow docs/API-CONVENTIONS.md: a struct code callers branch on, a message for people, and
/// the error underneath as a `cause` that equality ignores.
@Suite struct ServerErrorCodeTests {
    @Test(arguments: [
        ("port", ConfigurationError.Code.outOfRange, { @Sendable (c: inout HTTPDNSServerConfiguration) in c.port = 70_000 }),
        ("host", .invalidValue, { @Sendable (c: inout HTTPDNSServerConfiguration) in c.host = "" }),
        ("tlsKeyPath", .inconsistent, { @Sendable (c: inout HTTPDNSServerConfiguration) in c.tlsCertificatePath = "/x.pem" }),
        ("tlsCertificatePath", .inconsistent, { @Sendable (c: inout HTTPDNSServerConfiguration) in c.tlsKeyPath = "/x.pem" }),
        ("maxHostsPerBatch", .outOfRange, { @Sendable (c: inout HTTPDNSServerConfiguration) in c.maxHostsPerBatch = 0 }),
        ("idleTimeout", .outOfRange, { @Sendable (c: inout HTTPDNSServerConfiguration) in c.idleTimeout = .zero }),
        ("accounts", .invalidValue, { @Sendable (c: inout HTTPDNSServerConfiguration) in c.accounts = ["a/b": .init(secret: "x")] }),
        ("readinessProbeName", .invalidValue, { @Sendable (c: inout HTTPDNSServerConfiguration) in c.readinessProbeName = "not a name" }),
    ] as [(String, ConfigurationError.Code, @Sendable (inout HTTPDNSServerConfiguration) -> Void)])
    func anUnworkableSettingSaysWhatKindOfProblemItIs(
        key: String,
        code: ConfigurationError.Code,
        change: @Sendable (inout HTTPDNSServerConfiguration) -> Void
    ) {
        var configuration = HTTPDNSServerConfiguration()
        change(&configuration)
        let error = #expect(throws: ConfigurationError.self) { try configuration.validate() }
        #expect(error?.key == key)
        #expect(error?.code == code, "\(String(describing: error))")
    }

    @Test func aCertificateFileThatCannotBeReadKeepsTheTLSLibrarysError() throws {
        var configuration = HTTPDNSServerConfiguration()
        configuration.tlsCertificatePath = "/nonexistent/cert.pem"
        configuration.tlsKeyPath = "/nonexistent/key.pem"
        let error = #expect(throws: HTTPDNSServerConfiguration.TLSFilesError.self) { try configuration.tlsConfiguration() }
        #expect(error?.code == .invalidCertificate, "\(String(describing: error))")
        #expect(error?.cause != nil)
        #expect(error?.description.hasPrefix("tlsCert /nonexistent/cert.pem ") == true)
    }

    @Test func aKeyFileThatIsNotAKeyIsAnInvalidPrivateKey() async throws {
        try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, _ in
            var configuration = HTTPDNSServerConfiguration()
            configuration.tlsCertificatePath = certificate
            configuration.tlsKeyPath = certificate
            let error = #expect(throws: HTTPDNSServerConfiguration.TLSFilesError.self) { try configuration.tlsConfiguration() }
            #expect(error?.code == .invalidPrivateKey, "\(String(describing: error))")
            #expect(error?.cause != nil)
        }
    }

    @Test func aTLSFilesErrorKeepsItsCauseOutOfEquality() {
        typealias TLSFilesError = HTTPDNSServerConfiguration.TLSFilesError
        let withCause = TLSFilesError(.invalidPrivateKey, description: "tlsKey /k.pem is not a PEM private key", cause: CancellationError())
        let without = TLSFilesError(.invalidPrivateKey, description: "tlsKey /k.pem is not a PEM private key")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
        #expect(withCause != TLSFilesError(.invalidCertificate, description: "tlsKey /k.pem is not a PEM private key"))
    }

    @Test func everyCodeIsListedOnceWithItsOwnWord() {
        let all = HTTPDNSServerConfiguration.TLSFilesError.Code.all
        #expect(all.count == 2)
        #expect(Set(all.map(\.description)) == ["invalid_certificate", "invalid_private_key"])
    }
}
