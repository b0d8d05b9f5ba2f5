import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import Logging
import Testing

/// The HTTPS sources' own HTTP/2 client against a real nginx serving JSON DNS (`/resolve`: 127.0.0.9 for any name):
/// one connection carries many lookups at once, a server that closes its connections with a GOAWAY every few requests
/// loses none, an answer over the limit fails its lookup alone, and a server that speaks only HTTP/1.1 is still asked.
@Suite("The HTTPS sources' HTTP/2 client against nginx", .timeLimit(.minutes(2)))
struct HTTP2ServiceClientTests {
    static func source(_ origin: NginxServer, port: Int? = nil, cacert: String, logger: Logger? = nil) throws -> JSONDNSSource {
        var connection = ServiceConnection(servers: [try ServiceEndpoint(parsing: "https://\(origin.address):\(port ?? origin.port)/resolve")])
        connection.serverName = "dns.test"
        connection.extraTrustRootsPEMFile = cacert
        connection.budget = .seconds(10)
        connection.attemptTimeout = .seconds(10)
        return try JSONDNSSource(configuration: .init(connection: connection), logger: logger ?? Logger(label: "test"))
    }

    static func withOrigin(keepaliveRequests: Int = 1000, _ body: (NginxServer, String) async throws -> Void) async throws {
        try await TestCertificate.with(subjectAltName: "DNS:dns.test") { certificate, key in
            try await withNginx(names: ["dns.test"], certificate: certificate, key: key, keepaliveRequests: keepaliveRequests) { origin in
                try await body(origin, certificate)
            }
        }
    }

    /// `count` distinct names looked up at once, each expected to be 127.0.0.9.
    static func lookUpAtOnce(_ source: JSONDNSSource, count: Int, prefix: String) async throws {
        try await withThrowingTaskGroup(of: SourceAnswer.self) { group in
            for index in 0..<count {
                group.addTask { try await source.query(try HostName("\(prefix)\(index).test"), families: .ipv4) }
            }
            for try await answer in group {
                #expect(answer.ipv4 == .addresses([IPv4Address("127.0.0.9")!], ttlSeconds: 300), "\(answer)")
            }
        }
    }

    /// The established TCP connections to nginx's TLS port with HTTP/2.
    static func connections(to origin: NginxServer) throws -> Int {
        try NativeServiceSourceTests.establishedConnections(to: origin.address, port: origin.port).count
    }

    @Test func manyLookupsAtOnceShareOneConnection() async throws {
        try await Self.withOrigin { origin, certificate in
            let source = try Self.source(origin, cacert: certificate)
            try await Self.lookUpAtOnce(source, count: 200, prefix: "many")
            #expect(try Self.connections(to: origin) == 1, "one kept-alive connection carried them all")
            await source.shutdown()
        }
    }

    /// nginx closes each connection after 20 requests with a GOAWAY: requests after its last stream went unprocessed
    /// and are sent again on a new connection (60 at once: three connections), and a connection it closes is replaced.
    @Test func aServerThatSendsGOAWAYEveryTwentyRequestsLosesNoLookup() async throws {
        try await Self.withOrigin(keepaliveRequests: 20) { origin, certificate in
            let source = try Self.source(origin, cacert: certificate)
            try await Self.lookUpAtOnce(source, count: 60, prefix: "burst")
            for index in 0..<50 {
                let answer = try await source.query(try HostName("one\(index).test"), families: .ipv4)
                #expect(answer.ipv4 == .addresses([IPv4Address("127.0.0.9")!], ttlSeconds: 300))
            }
            await source.shutdown()
        }
    }

    /// The 50 MiB file where an answer is expected (nginx sends it for names that start with "large"): the lookup
    /// fails as malformed once 64 KiB have come (the stream is reset, not read to its end), and the connection goes on
    /// serving the next lookups.
    @Test func anAnswerOverTheLimitFailsItsLookupOnly() async throws {
        try await Self.withOrigin { origin, certificate in
            let source = try Self.source(origin, cacert: certificate)
            for index in 0..<20 {
                let name = try HostName("large\(index).test")
                let error = await #expect(throws: ResolutionError.self) { try await source.query(name, families: .ipv4) }
                #expect(error?.code == .malformedAnswer, "\(String(describing: error))")
                #expect(error?.message.contains("more than the answer for \(name) can hold") == true, "\(String(describing: error))")
            }
            let answer = try await source.query(try HostName("small.test"), families: .ipv4)
            #expect(answer.ipv4 == .addresses([IPv4Address("127.0.0.9")!], ttlSeconds: 300))
            #expect(try Self.connections(to: origin) == 1, "the streams were reset, the connection kept")
            await source.shutdown()
        }
    }

    /// A TLS port whose ALPN offers no `h2`: the source says so once, and asks over HTTP/1.1.
    @Test func aServerThatSpeaksOnlyHTTP1IsAskedOverHTTP1() async throws {
        try await Self.withOrigin { origin, certificate in
            let records = RecordingLogHandler.Records()
            let source = try Self.source(origin, port: origin.http1Port, cacert: certificate, logger: RecordingLogHandler.logger(records))
            try await Self.lookUpAtOnce(source, count: 10, prefix: "http1-")
            let notices = records.all.filter { $0.message.contains("negotiated no HTTP/2") }
            #expect(notices.count == 1, "\(records.all)")
            await source.shutdown()
        }
    }
}
