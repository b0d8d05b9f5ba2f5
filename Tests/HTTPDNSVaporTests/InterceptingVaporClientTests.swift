#if Vapor
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSTesting
import HTTPDNSVapor
import Metrics
import MetricsTestKit
import NIOCore
import NIOSSL
import Testing
import Vapor
import VaporTesting

/// Vapor's `app.client` and `req.client` through the interceptor, end to end: an `Application(.testing)` whose
/// clients are `.httpdns(…)`, against a real nginx over HTTPS with a certificate made at test time for `a.test` and
/// `b.test`. nginx reports the SNI and Host it saw. The trusted source answers nginx's address; the local resolver
/// (the fallback) lies with a dead one, and is never asked.
@Suite("Vapor's client through the interceptor, against nginx", .timeLimit(.minutes(2)))
struct InterceptingVaporClientTests {
    struct Stage {
        let origin: NginxServer
        let trusted: StaticSource
        let liar: StaticSource
        let resolver: HostResolver
        /// The interceptor's configuration, with nginx's certificate trusted.
        let configuration: InterceptingHTTPClient.Configuration

        var port: Int { origin.port }

        /// `https://NAME:port/PATH`.
        func url(_ name: String, _ path: String) -> URI { URI(string: "https://\(name):\(origin.port)\(path)") }
    }

    /// nginx for a.test and b.test, and a resolver (shut down afterwards) whose trusted source answers both with its
    /// address and whose fallback lies.
    static func withStage(_ body: (Stage) async throws -> Void) async throws {
        try await TestCertificate.with(subjectAltName: "DNS:a.test,DNS:b.test") { certificate, key in
            try await withNginx(names: ["a.test", "b.test"], certificate: certificate, key: key) { origin in
                let trusted = StaticSource(
                    [
                        "a.test": .addresses(ipv4: [origin.address], ipv6: [], ttl: 300),
                        "b.test": .addresses(ipv4: [origin.address], ipv6: [], ttl: 300),
                    ],
                    otherwise: .failure(.serverUnreachable),
                    name: "httpdns"
                )
                let last = Int(origin.address.split(separator: ".").last!)!
                let dead = "127.0.0.\(last == 250 ? 249 : last + 1)"
                let liar = StaticSource(
                    ["a.test": .addresses(ipv4: [dead], ipv6: [], ttl: 300), "b.test": .addresses(ipv4: [dead], ipv6: [], ttl: 300)],
                    name: "system"
                )
                var configuration = InterceptingHTTPClient.Configuration()
                configuration.tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
                try await withHostResolver(trusted: trusted, fallbacks: [liar]) { resolver in
                    try await body(Stage(origin: origin, trusted: trusted, liar: liar, resolver: resolver, configuration: configuration))
                }
            }
        }
    }

    /// Runs `body` with an `Application(.testing)`, shut down afterwards however `body` ends.
    static func withApplication(_ body: (Application) async throws -> Void) async throws {
        let app = try await Application.make(.testing)
        do {
            try await body(app)
        } catch {
            try? await app.asyncShutdown()
            throw error
        }
        try await app.asyncShutdown()
    }

    static func text(_ response: ClientResponse) -> String? {
        response.body.map { String(buffer: $0) }
    }

    /// With an interceptor the caller owns: `app.client` and, in a route, `req.client` reach nginx at the trusted
    /// address with the name in SNI and Host; a POST's body arrives; the app's shutdown leaves the interceptor running.
    @Test func appClientAndReqClientGoThroughTheInterceptor() async throws {
        try await Self.withStage { stage in
            try await withInterceptingHTTPClient(resolver: stage.resolver, configuration: stage.configuration) { interceptor in
                try await Self.withApplication { app in
                    try app.clients.use(.httpdns(interceptor))
                    #expect(app.client is InterceptingVaporClient)

                    let response = try await app.client.get(stage.url("a.test", "/from-app"))
                    #expect(response.status == .ok)
                    #expect(Self.text(response) == "sni=a.test host=a.test:\(stage.port)\n")

                    let posted = try await app.client.post(stage.url("a.test", "/echo")) { $0.body = ByteBuffer(string: "from vapor") }
                    #expect(Self.text(posted) == "method=POST body=from vapor")
                    #expect(posted.headers.first(name: "x-seen") == "sni=a.test host=a.test:\(stage.port)")

                    let target = stage.url("b.test", "/from-route")
                    app.get("proxy") { req async throws -> String in
                        let answer = try await req.client.get(target)
                        return answer.body.map { String(buffer: $0) } ?? ""
                    }
                    try await app.testing().test(.GET, "proxy") { response in
                        #expect(response.status == .ok)
                        #expect(response.body.string == "sni=b.test host=b.test:\(stage.port)\n")
                    }

                    #expect(stage.trusted.queryCount("a.test") == 1 && stage.trusted.queryCount("b.test") == 1)
                    #expect(stage.liar.queryCount("a.test") == 0 && stage.liar.queryCount("b.test") == 0)
                }
                // The caller's interceptor outlives the application.
                let after = try await interceptor.execute(method: "GET", url: "https://a.test:\(stage.port)/after", timeout: .seconds(30))
                #expect(after.response.status == .ok)
                _ = try await after.response.body.collect(upTo: 1 << 16)
            }
        }
    }

    /// With an interceptor the provider makes over a resolver, the application owns it and shuts it down with itself;
    /// the resolver stays the caller's.
    @Test func anInterceptorTheProviderMadeIsShutDownWithTheApplication() async throws {
        try await Self.withStage { stage in
            let app = try await Application.make(.testing)
            let interceptor: InterceptingHTTPClient
            do {
                try app.clients.use(.httpdns(resolver: stage.resolver, configuration: stage.configuration))
                interceptor = try #require(app.client as? InterceptingVaporClient).interceptor
                let response = try await app.client.get(stage.url("a.test", "/"))
                #expect(Self.text(response) == "sni=a.test host=a.test:\(stage.port)\n")
            } catch {
                try? await app.asyncShutdown()
                throw error
            }
            try await app.asyncShutdown()
            let error = await #expect(throws: InterceptorError.self) {
                try await interceptor.execute(method: "GET", url: "https://a.test:\(stage.port)/", timeout: .seconds(30))
            }
            #expect(error?.code == .shutdown, "\(String(describing: error))")
            // The resolver still answers.
            let answer = try await stage.resolver.resolve(try HostName("b.test"))
            #expect(answer.resolution.ipv4.map { "\($0)" } == [stage.origin.address])
        }
    }

    /// Errors are the interceptor's: a name no source resolves, a response longer than the bound, a request past its
    /// `timeout`; a configuration that cannot be used is refused when the provider is made.
    /// The hijack and certificate cases fail as they do for the interceptor: with the trusted source down, the local
    /// resolver's private answer is refused by the guard; a name the certificate does not hold is a certificate
    /// rejection.
    @Test func aLyingResolverAndAWrongCertificateFailAsForTheInterceptor() async throws {
        try await Self.withStage { stage in
            try await withInterceptingHTTPClient(resolver: stage.resolver, configuration: stage.configuration) { interceptor in
                try await Self.withApplication { app in
                    try app.clients.use(.httpdns(interceptor))
                    let last = Int(stage.origin.address.split(separator: ".").last!)!
                    stage.trusted.set("shop.test", .failure(.serverUnreachable))
                    stage.liar.set("shop.test", .addresses(ipv4: ["127.0.0.\(last == 250 ? 249 : last + 1)"], ipv6: [], ttl: 300))
                    let hijack = await #expect(throws: InterceptorError.self) { try await app.client.get(stage.url("shop.test", "/")) }
                    #expect(hijack?.code == .resolutionFailed, "\(String(describing: hijack))")
                    #expect(hijack?.resolutionError?.code == .rejectedByGuard, "\(String(describing: hijack))")

                    stage.trusted.set("c.test", .addresses(ipv4: [stage.origin.address], ipv6: [], ttl: 300))
                    let wrong = await #expect(throws: InterceptorError.self) { try await app.client.get(stage.url("c.test", "/")) }
                    #expect(wrong?.code == .certificateRejected, "\(String(describing: wrong))")
                }
            }
        }
    }

    @Test func errorsAreTheInterceptors() async throws {
        try await Self.withStage { stage in
            try await withInterceptingHTTPClient(resolver: stage.resolver, configuration: stage.configuration) { interceptor in
                try await Self.withApplication { app in
                    var bounded = InterceptingVaporClient.Configuration()
                    bounded.maxResponseBodyBytes = 64 << 20
                    try app.clients.use(.httpdns(interceptor, configuration: bounded))

                    let unresolved = await #expect(throws: InterceptorError.self) { try await app.client.get(stage.url("nowhere.test", "/")) }
                    #expect(unresolved?.code == .resolutionFailed, "\(String(describing: unresolved))")

                    // 50 MB in 50 ms: the request's own timeout, over the head or the body.
                    let slow = await #expect(throws: InterceptorError.self) {
                        try await app.client.send(ClientRequest(method: .GET, url: stage.url("a.test", "/large"), timeout: .milliseconds(50)))
                    }
                    #expect(slow?.code == .timeout, "\(String(describing: slow))")
                }
                try await Self.withApplication { app in
                    var small = InterceptingVaporClient.Configuration()
                    small.maxResponseBodyBytes = 16
                    try app.clients.use(.httpdns(interceptor, configuration: small))
                    let long = await #expect(throws: InterceptorError.self) { try await app.client.get(stage.url("a.test", "/")) }
                    #expect(long?.code == .transportFailed && (long?.cause as? NIOTooManyBytesError) != nil, "\(String(describing: long))")
                }
                var zero = InterceptingVaporClient.Configuration()
                zero.timeout = .zero
                let refused = #expect(throws: ConfigurationError.self) { try Application.Clients.Provider.httpdns(interceptor, configuration: zero) }
                #expect(refused?.key == "timeout")
            }
        }
    }

    /// A request whose host's answer is cached, with one address, goes out directly on AsyncHTTPClient's future API
    /// (the client's trace says so), under the pipeline's rules: a 307 from there is followed, its body sent again
    /// whole; a response past the bound, a request past its timeout and an address that refuses fail with the
    /// pipeline's codes. A request whose answer must be waited for goes through the pipeline.
    @Test func aCachedRequestGoesOutDirectlyUnderThePipelinesRules() async throws {
        try await Self.withStage { stage in
            try await withInterceptingHTTPClient(resolver: stage.resolver, configuration: stage.configuration) { interceptor in
                let records = RecordingLogHandler.Records()
                var configuration = InterceptingVaporClient.Configuration()
                configuration.maxResponseBodyBytes = 1 << 20
                let client = try InterceptingVaporClient(
                    interceptor, configuration: configuration, eventLoop: MultiThreadedEventLoopGroup.singleton.next(),
                    logger: RecordingLogHandler.logger(records)
                )
                func sentDirectly() -> Int { records.all.filter { $0.message.hasPrefix("sending directly") }.count }

                let cold = try await client.get(stage.url("a.test", "/cold"))
                #expect(Self.text(cold) == "sni=a.test host=a.test:\(stage.port)\n")
                #expect(sentDirectly() == 0, "the lookup was awaited: through the pipeline")

                let warm = try await client.get(stage.url("a.test", "/warm"))
                #expect(Self.text(warm) == "sni=a.test host=a.test:\(stage.port)\n")
                #expect(sentDirectly() == 1)

                // a.test, sent directly, redirects to b.test (not yet resolved): the next hop goes through the
                // pipeline, with the body.
                let redirected = try await client.post(stage.url("a.test", "/redirect/307/b.test/echo")) { $0.body = ByteBuffer(string: "kept") }
                #expect(Self.text(redirected) == "method=POST body=kept")
                #expect(redirected.headers.first(name: "x-seen") == "sni=b.test host=b.test:\(stage.port)")
                #expect(sentDirectly() == 2)

                let long = await #expect(throws: InterceptorError.self) { try await client.get(stage.url("a.test", "/large")) }
                #expect(long?.code == .transportFailed && (long?.cause as? NIOTooManyBytesError) != nil, "\(String(describing: long))")
                // 50 MB in 50 ms, with room for them.
                var roomy = configuration
                roomy.maxResponseBodyBytes = 64 << 20
                let patient = try InterceptingVaporClient(
                    interceptor, configuration: roomy, eventLoop: client.eventLoop, logger: RecordingLogHandler.logger(records)
                )
                let slow = await #expect(throws: InterceptorError.self) {
                    try await patient.send(ClientRequest(method: .GET, url: stage.url("b.test", "/large"), timeout: .milliseconds(50))).get()
                }
                #expect(slow?.code == .timeout, "\(String(describing: slow))")
                #expect(sentDirectly() == 4)

                // Nothing listens on d.test's address: refused the first time through the pipeline, then directly,
                // with the same code and words.
                let last = Int(stage.origin.address.split(separator: ".").last!)!
                stage.trusted.set("d.test", .addresses(ipv4: ["127.0.0.\(last == 250 ? 249 : last + 1)"], ipv6: [], ttl: 300))
                var refusals: [InterceptorError] = []
                for _ in 0..<2 {
                    let refused = await #expect(throws: InterceptorError.self) { try await client.get(stage.url("d.test", "/")) }
                    if let refused { refusals.append(refused) }
                }
                #expect(sentDirectly() == 5)
                #expect(refusals.map(\.code) == [.connectFailed, .connectFailed], "\(refusals)")
                #expect(refusals.allSatisfy { $0.message.hasPrefix("no address of d.test could be connected to") }, "\(refusals)")
                #expect(refusals.count == 2 && refusals[0].message == refusals[1].message, "\(refusals)")
            }
        }
    }

    /// A redirect answered on the direct path whose next hop fails: the next hop is sent once, and the request is
    /// counted once, with the next hop's failure (the redirect's follow-up is never taken for the first send's
    /// failure).
    @Test func aFailedHopAfterADirectRedirectIsSentAndCountedOnce() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            try await Self.withStage { stage in
                try await withInterceptingHTTPClient(resolver: stage.resolver, configuration: stage.configuration) { interceptor in
                    let records = RecordingLogHandler.Records()
                    let client = try InterceptingVaporClient(
                        interceptor, eventLoop: MultiThreadedEventLoopGroup.singleton.next(), logger: RecordingLogHandler.logger(records)
                    )
                    let last = Int(stage.origin.address.split(separator: ".").last!)!
                    stage.trusted.set("d.test", .addresses(ipv4: ["127.0.0.\(last == 250 ? 249 : last + 1)"], ipv6: [], ttl: 300))
                    _ = try await stage.resolver.resolve(try HostName("a.test"))
                    let refused = await #expect(throws: InterceptorError.self) {
                        try await client.post(stage.url("a.test", "/redirect/307/d.test/echo")) { $0.body = ByteBuffer(string: "once") }
                    }
                    #expect(refused?.code == .connectFailed, "\(String(describing: refused))")
                    #expect(records.all.filter { $0.message.hasPrefix("sending directly") }.count == 1, "the first hop went out directly")
                    #expect(records.all.filter { $0.message == "following a redirect" }.count == 1)
                    let counted = metrics.counterTotal(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", "connect_failed")])
                    #expect(counted == 1, "counted \(counted) times")
                    #expect(stage.trusted.queryCount("d.test") == 1)
                }
            }
        }
    }

    /// The direct path's edges: a client whose event loop is not one of the interceptor's group (AsyncHTTPClient
    /// completes elsewhere, and the answer hops over); a redirect whose body is longer than the bound (not the
    /// caller's: followed, as the pipeline follows it); a bound past what a ByteBuffer holds.
    @Test func theDirectPathTakesAnyLoopAndFollowsARedirectPastTheBound() async throws {
        try await Self.withStage { stage in
            try await withInterceptingHTTPClient(resolver: stage.resolver, configuration: stage.configuration) { interceptor in
                let records = RecordingLogHandler.Records()
                let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
                var tiny = InterceptingVaporClient.Configuration()
                tiny.maxResponseBodyBytes = 64
                let client = try InterceptingVaporClient(
                    interceptor, configuration: tiny, eventLoop: group.next(), logger: RecordingLogHandler.logger(records)
                )
                do {
                    func sentDirectly() -> Int { records.all.filter { $0.message.hasPrefix("sending directly") }.count }
                    _ = try await stage.resolver.resolve(try HostName("a.test"))
                    _ = try await stage.resolver.resolve(try HostName("b.test"))
                    // The redirect's own body (nginx's HTML page) is longer than 64 bytes; the answer's is not.
                    let redirected = try await client.send(ClientRequest(method: .GET, url: stage.url("a.test", "/redirect/302/b.test/x"))).get()
                    #expect(redirected.status == .ok)
                    #expect(Self.text(redirected)?.hasPrefix("sni=b.test") == true, "\(String(describing: Self.text(redirected)))")
                    #expect(sentDirectly() == 1)
                    // The answer's body, longer than the bound, still fails as too long.
                    let long = await #expect(throws: InterceptorError.self) {
                        try await client.send(ClientRequest(method: .GET, url: stage.url("b.test", "/large"))).get()
                    }
                    #expect(long?.code == .transportFailed && (long?.cause as? NIOTooManyBytesError) != nil, "\(String(describing: long))")
                    #expect(sentDirectly() == 2)

                    var unbounded = InterceptingVaporClient.Configuration()
                    unbounded.maxResponseBodyBytes = .max
                    let roomy = try InterceptingVaporClient(interceptor, configuration: unbounded, eventLoop: group.next())
                    let answer = try await roomy.send(ClientRequest(method: .GET, url: stage.url("a.test", "/roomy"))).get()
                    #expect(Self.text(answer) == "sni=a.test host=a.test:\(stage.port)\n")
                } catch {
                    try await group.shutdownGracefully()
                    throw error
                }
                try await group.shutdownGracefully()
            }
        }
    }

    /// The example of the module's documentation (HTTPDNSVapor.md), as written there but for the URL's port and
    /// `app.testing()` in place of `app.execute()`.
    @Test func theDocumentationExample() async throws {
        try await TestCertificate.with(subjectAltName: "DNS:api.example.com") { certificate, key in
            try await withNginx(names: ["api.example.com"], certificate: certificate, key: key) { origin in
                let source = StaticSource(["api.example.com": .addresses(ipv4: [origin.address], ipv6: [], ttl: 300)], name: "httpdns")
                var configuration = InterceptingHTTPClient.Configuration()
                configuration.tls.additionalTrustRoots = [.file(certificate)]
                let weatherURL = URI(string: "https://api.example.com:\(origin.port)/weather")

                // The example (its lines between `do` and `catch`, and the two after):
                let resolver = try HostResolver(trusted: source, fallbacks: [])
                let app = try await Application.make(.testing)
                do {
                    // The application makes the interceptor, and shuts it down with itself; the resolver stays yours.
                    try app.clients.use(.httpdns(resolver: resolver, configuration: configuration))
                    app.get("weather") { req async throws -> ClientResponse in
                        try await req.client.get(weatherURL)
                    }
                    try await app.testing().test(.GET, "weather") { response in
                        #expect(response.body.string == "sni=api.example.com host=api.example.com:\(origin.port)\n")
                    }
                } catch {
                    try? await app.asyncShutdown()
                    await resolver.shutdown()
                    throw error
                }
                try await app.asyncShutdown()
                await resolver.shutdown()
            }
        }
    }
}
#endif
