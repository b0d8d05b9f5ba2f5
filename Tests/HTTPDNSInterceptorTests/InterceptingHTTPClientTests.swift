import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSTesting
import NIOCore
import NIOSSL
import Testing

/// What ``InterceptingHTTPClient`` decides before it sends anything: which configurations it refuses, and which
/// requests it takes or passes. No request is sent.
@Suite struct InterceptingHTTPClientTests {
    typealias Configuration = InterceptingHTTPClient.Configuration
    typealias Header = CanonicalRequest.Header

    static func resolver() throws -> HostResolver {
        try HostResolver(trusted: StaticSource(), fallbacks: [])
    }

    /// Runs `body` with a client that is shut down afterwards, whatever `body` does: a client not shut down traps
    /// when its AsyncHTTPClient instances deinit.
    static func withClient(_ configuration: Configuration = Configuration(), _ body: (InterceptingHTTPClient) throws -> Void) async throws {
        let client = try InterceptingHTTPClient(resolver: resolver(), configuration: configuration)
        let result = Result { try body(client) }
        await client.shutdown()
        try result.get()
    }

    // MARK: Configuration

    struct Refused: Sendable, CustomTestStringConvertible {
        let label: String
        let key: String
        let change: @Sendable (inout Configuration) -> Void
        var testDescription: String { label }
    }

    static let refused: [Refused] = [
        Refused(label: "maxRedirects -1", key: "maxRedirects") { $0.maxRedirects = -1 },
        Refused(label: "maxClients 0", key: "maxClients") { $0.maxClients = 0 },
        Refused(label: "maxClients -1", key: "maxClients") { $0.maxClients = -1 },
        Refused(label: "connectTimeout 0", key: "connectTimeout") { $0.connectTimeout = .zero },
        Refused(label: "connectTimeout negative", key: "connectTimeout") { $0.connectTimeout = .milliseconds(-1) },
        Refused(label: "readTimeout 0", key: "readTimeout") { $0.readTimeout = .zero },
        Refused(label: "no certificate verification", key: "tls") { $0.tls.certificateVerification = .none },
        Refused(label: "no families", key: "families") { $0.families = [] },
    ]

    @Test(arguments: refused)
    func aConfigurationThatCannotWorkIsRefused(_ test: Refused) async throws {
        var configuration = Configuration()
        test.change(&configuration)
        let resolver = try Self.resolver()
        let error = await #expect(throws: ConfigurationError.self) {
            let client = try InterceptingHTTPClient(resolver: resolver, configuration: configuration)
            // Only reached when the configuration is wrongly accepted.
            await client.shutdown()
        }
        #expect(error?.key == test.key, "\(String(describing: error))")
        #expect(error?.reason.isEmpty == false)
    }

    struct Accepted: Sendable, CustomTestStringConvertible {
        let label: String
        let change: @Sendable (inout Configuration) -> Void
        var testDescription: String { label }
    }

    static let accepted: [Accepted] = [
        Accepted(label: "the defaults") { _ in },
        Accepted(label: "maxRedirects 0") { $0.maxRedirects = 0 },
        Accepted(label: "maxClients 1") { $0.maxClients = 1 },
        Accepted(label: "IPv4 only") { $0.families = .ipv4 },
        Accepted(label: "IPv6 only") { $0.families = .ipv6 },
        Accepted(label: "1 ms timeouts") {
            $0.connectTimeout = .milliseconds(1)
            $0.readTimeout = .milliseconds(1)
        },
    ]

    @Test(arguments: accepted)
    func theSmallestWorkingLimitsAreAccepted(_ test: Accepted) async throws {
        var configuration = Configuration()
        test.change(&configuration)
        try await Self.withClient(configuration) { client in
            #expect(client.configuration.maxRedirects == configuration.maxRedirects)
            #expect(client.configuration.families == configuration.families)
        }
    }

    /// The refusal says why: "the certificate must hold the original host". Without hostname verification it need not.
    @Test func certificateVerificationWithoutTheHostIsRefused() async throws {
        var configuration = Configuration()
        configuration.tls.certificateVerification = .noHostnameVerification
        let resolver = try Self.resolver()
        let error = await #expect(throws: ConfigurationError.self) {
            let client = try InterceptingHTTPClient(resolver: resolver, configuration: configuration)
            await client.shutdown()
        }
        #expect(error?.key == "tls")
    }

    // MARK: Take or pass

    struct Decision: Sendable, CustomTestStringConvertible {
        let url: String
        var headers: [Header] = []
        let decision: Expected
        var testDescription: String { ([url] + headers.map { "\($0.name): \($0.value)" }).joined(separator: " ") }
    }

    /// A decision as written in the table; a name is made a ``HostName`` in the test, where a bad one is an issue.
    enum Expected: Sendable {
        case take(String)
        case pass(InterceptingHTTPClient.PassReason)

        func decision() throws -> InterceptingHTTPClient.Decision {
            switch self {
            case .take(let name): .take(try HostName(name))
            case .pass(let reason): .pass(reason)
            }
        }
    }


    static let decisions: [Decision] = [
        Decision(url: "https://a.example/", decision: .take("a.example")),
        Decision(url: "https://A.Example./x", decision: .take("a.example")),
        Decision(url: "http://a.example:8080/", decision: .take("a.example")),
        Decision(url: "https://internal.test/", decision: .take("internal.test")),
        Decision(url: "https://notinternal.test/", decision: .take("notinternal.test")),
        Decision(url: "https://a.internal.test.example/", decision: .take("a.internal.test.example")),
        Decision(url: "http://192.0.2.1/", decision: .pass(.addressLiteral)),
        Decision(url: "http://192.0.2.1:8080/x", decision: .pass(.addressLiteral)),
        Decision(url: "http://192.0.2.1./", decision: .pass(.addressLiteral)),
        Decision(url: "https://[::1]/", decision: .pass(.addressLiteral)),
        Decision(url: "https://[2001:DB8::1]:8443/", decision: .pass(.addressLiteral)),
        Decision(url: "https://db.internal.test/", decision: .pass(.excluded)),
        Decision(url: "https://DB.Internal.Test./", decision: .pass(.excluded)),
        Decision(url: "https://a.b.internal.test/", decision: .pass(.excluded)),
        Decision(url: "https://a.example/", headers: [Header("X-HTTPDNS-Handled-By", "1")], decision: .take("a.example")),
    ]

    @Test(arguments: decisions)
    func aRequestIsTakenOrPassed(_ test: Decision) async throws {
        var configuration = Configuration()
        configuration.excludedHosts = try HostPatterns([".internal.test"])
        let request = try #require(try CanonicalRequest.normalize(method: "GET", url: test.url, headers: test.headers))
        let expected = try test.decision.decision()
        try await Self.withClient(configuration) { client in
            #expect(client.decide(request) == expected)
        }
    }

    @Test func noHostIsExcludedByDefault() async throws {
        let request = try #require(try CanonicalRequest.normalize(method: "GET", url: "https://db.internal.test/"))
        let name = try HostName("db.internal.test")
        try await Self.withClient { client in
            #expect(client.decide(request) == .take(name))
        }
    }

    /// The URL's host is a name, so the pipeline must resolve it or refuse it; passed as an address literal, it is
    /// sent through the passthrough client and resolved by the system, out of the resolver's reach.
    @Test(arguments: ["https://a_b.example/", "https://-a.example/"])
    func aNameHostNameRefusesIsNotCalledAnAddressLiteral(_ url: String) async throws {
        let request = try #require(try CanonicalRequest.normalize(method: "GET", url: url))
        try await Self.withClient { client in
            guard case .refuse = client.decide(request) else {
                Issue.record("\(url): \(client.decide(request)), not refused")
                return
            }
        }
    }
}
