import AsyncHTTPClient
import Foundation
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSTesting
import Metrics
import MetricsTestKit
import NIOCore
import NIOSSL
import Testing

/// The interceptor end to end: requests through `InterceptingHTTPClient` to a real nginx over HTTPS, with a
/// certificate made at test time for `a.test` and `b.test`. nginx reports the SNI and Host it saw. The resolver's
/// sources are in-process (`StaticSource`): they stand for the trusted service and a lying local resolver, whose
/// faults are the point here; the sources themselves are tested against real peers elsewhere.
@Suite("The interceptor against nginx", .timeLimit(.minutes(2)))
struct InterceptorAgainstNginxTests {
    struct Stage {
        let origin: NginxServer
        let certificate: String
        let trusted: StaticSource
        let client: InterceptingHTTPClient

        /// `https://NAME:port/PATH`.
        func url(_ name: String, _ path: String) -> String { "https://\(name):\(origin.port)\(path)" }

        func get(_ url: String) async throws -> (InterceptingHTTPClient.Response, String) {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
            let body = try await response.response.body.collect(upTo: 1 << 20)
            return (response, String(buffer: body))
        }
    }

    /// nginx for a.test and b.test; a resolver whose trusted source answers both with nginx's address (or with
    /// `addresses(origin)` when given), and whose fallback is `fallback`.
    static func withStage(
        addresses: ((NginxServer) -> [String])? = nil,
        fallback: StaticSource? = nil,
        configure: (inout InterceptingHTTPClient.Configuration) -> Void = { _ in },
        _ body: (Stage) async throws -> Void
    ) async throws {
        try await TestCertificate.with(subjectAltName: "DNS:a.test,DNS:b.test") { certificate, key in
            try await withNginx(names: ["a.test", "b.test"], certificate: certificate, key: key) { origin in
                let ipv4 = addresses?(origin) ?? [origin.address]
                let trusted = StaticSource(
                    ["a.test": .addresses(ipv4: ipv4, ipv6: [], ttl: 300), "b.test": .addresses(ipv4: [origin.address], ipv6: [], ttl: 300)],
                    otherwise: .failure(.serverUnreachable),
                    name: "httpdns"
                )
                let resolver = try HostResolver(trusted: trusted, fallbacks: fallback.map { [$0] } ?? [])
                var configuration = InterceptingHTTPClient.Configuration()
                configuration.tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
                configure(&configuration)
                let client = try InterceptingHTTPClient(resolver: resolver, configuration: configuration)
                do {
                    try await body(Stage(origin: origin, certificate: certificate, trusted: trusted, client: client))
                } catch {
                    await client.shutdown()
                    throw error
                }
                await client.shutdown()
            }
        }
    }

    /// Another loopback address than `origin`'s, where nothing listens on its port.
    static func deadAddress(besides origin: NginxServer) -> String {
        let last = Int(origin.address.split(separator: ".").last!)!
        return "127.0.0.\(last == 250 ? 249 : last + 1)"
    }

    @Test func theRequestGoesToTheResolvedAddressWithTheNameInSNIAndHost() async throws {
        try await Self.withStage { stage in
            for name in ["a.test", "b.test"] {
                let (response, body) = try await stage.get(stage.url(name, "/path"))
                #expect(body == "sni=\(name) host=\(name):\(stage.origin.port)\n")
                #expect(response.response.status == .ok)
                #expect(response.connectedAddress == IPAddress(stage.origin.address))
                #expect(response.serverName == name && response.redirects == 0 && !response.resolvedByFallback)
                // A 200 over https with no Cache-Control: heuristically storable, in memory only.
                #expect(response.cacheStoragePolicy == .allowedInMemoryOnly)
            }
            #expect(stage.trusted.queryCount("a.test") == 1)
            // Resolved once: the second request is a cache hit, on the same kept-alive client.
            _ = try await stage.get(stage.url("a.test", "/again"))
            #expect(stage.trusted.queryCount("a.test") == 1)
            #expect(stage.client.clientCount == 2)
        }
    }

    /// Plain http to a name goes through the pipeline too (resolved, sent to the address), with no certificate to
    /// check; the request says so in Host and has no SNI.
    @Test func plainHTTPToANameIsSentToTheResolvedAddress() async throws {
        try await Self.withStage { stage in
            let (response, body) = try await stage.get("http://a.test:\(stage.origin.plainPort)/plain")
            #expect(body == "sni= host=a.test:\(stage.origin.plainPort)\n")
            #expect(response.connectedAddress == IPAddress(stage.origin.address))
            #expect(response.cacheStoragePolicy == .allowed, "plain http may be stored on disk")
        }
    }

    /// A URL whose host is an address is passed: sent as given, nothing resolved, its certificate checked for that
    /// address by NIOSSL, and counted as `passed`.
    @Test func aRequestToAnAddressIsPassedAsGiven() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            let address = "127.0.0.\(Int.random(in: 2...254))"
            try await TestCertificate.with(subjectAltName: "IP:\(address)") { certificate, key in
                let origin = try await NginxServer.start(names: ["a.test"], certificate: certificate, key: key, address: address)
                defer { origin.stop() }
                let trusted = StaticSource(name: "httpdns")
                var configuration = InterceptingHTTPClient.Configuration()
                configuration.tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
                let client = try InterceptingHTTPClient(resolver: try HostResolver(trusted: trusted, fallbacks: []), configuration: configuration)
                let result: Result<(InterceptingHTTPClient.Response, String), any Error>
                do {
                    let response = try await client.execute(HTTPClientRequest(url: "https://\(address):\(origin.port)/x"), timeout: .seconds(30))
                    result = .success((response, String(buffer: try await response.response.body.collect(upTo: 1024))))
                } catch {
                    result = .failure(error)
                }
                await client.shutdown()
                let (response, body) = try result.get()
                #expect(body == "sni= host=\(address):\(origin.port)\n", "no SNI for an address (RFC 6066)")
                #expect(response.connectedAddress == nil)
                #expect(trusted.queryCount(address) == 0)
                #expect(metrics.counterTotal(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", "passed")]) == 1)
            }
        }
    }

    /// The default port is left out of the Host header.
    @Test func theHostHeaderIsTheAuthorityAsWritten() async throws {
        try await Self.withStage { stage in
            let (_, body) = try await stage.get("HTTPS://A.TEST:\(stage.origin.port)/x/../y")
            #expect(body == "sni=a.test host=a.test:\(stage.origin.port)\n")
        }
    }

    /// A name the certificate does not hold: the request fails as a certificate error, at once, without trying
    /// the next address or retrying until the connect timeout.
    @Test func aWrongCertificateFailsAtOnce() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            try await Self.withStage(configure: { $0.connectTimeout = .seconds(40) }) { stage in
                stage.trusted.set("c.test", .addresses(ipv4: [stage.origin.address, stage.origin.address], ipv6: [], ttl: 300))
                let started = ContinuousClock.now
                let error = await #expect(throws: InterceptorError.self) { try await stage.get(stage.url("c.test", "/")) }
                let elapsed = ContinuousClock.now - started
                #expect(error?.code == .certificateRejected, "\(String(describing: error))")
                #expect(error?.message.contains("c.test") == true)
                // Retrying would take the connect timeout (40 s); a generous bound that a retry cannot meet, and that
                // a loaded machine (10 s seen while the whole suite starts its servers) can.
                #expect(elapsed < .seconds(20), "took \(elapsed)")
                #expect(metrics.counterTotal(label: "httpdns_connect_failovers_total") == 0)
                #expect(metrics.counterTotal(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", "certificate_rejected")]) == 1)
            }
        }
    }

    /// A certificate that holds only the address connected to, not the name: NIOSSL alone would take it (an IP SAN
    /// matching the socket's address), which would let anyone with a certificate for their own address answer for
    /// any name a lying resolver points at them. Refused, over HTTP/2 (nginx's choice) and HTTP/1.1, and the
    /// interceptor shuts down cleanly afterwards.
    @Test(arguments: [false, true])
    func aCertificateForTheAddressAloneIsRefused(_ http1Only: Bool) async throws {
        let address = "127.0.0.\(Int.random(in: 2...254))"
        try await TestCertificate.with(subjectAltName: "IP:\(address)") { certificate, key in
            let origin = try await NginxServer.start(names: ["a.test"], certificate: certificate, key: key, address: address)
            defer { origin.stop() }
            let trusted = StaticSource(["a.test": .addresses(ipv4: [origin.address], ipv6: [], ttl: 300)], name: "httpdns")
            var configuration = InterceptingHTTPClient.Configuration()
            configuration.tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
            if http1Only { configuration.tls.applicationProtocols = ["http/1.1"] }
            let client = try InterceptingHTTPClient(resolver: try HostResolver(trusted: trusted, fallbacks: []), configuration: configuration)
            let error = await #expect(throws: InterceptorError.self) {
                _ = try await client.execute(HTTPClientRequest(url: "https://a.test:\(origin.port)/"), timeout: .seconds(30))
            }
            #expect(error?.code == .certificateRejected, "\(String(describing: error))")
            #expect(error?.message.contains("does not hold a.test as a DNS name") == true, "\(String(describing: error))")
            await client.shutdown()
        }
    }

    /// nginx ends an HTTP/2 connection with a GOAWAY after a few requests; the streams it refuses were never
    /// processed, and AsyncHTTPClient fails them rather than send them again. The interceptor sends an idempotent
    /// request once more, so every request of a concurrent burst is answered, and the retries are counted.
    @Test func streamsRefusedByAGoawayAreSentAgain() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            try await TestCertificate.with(subjectAltName: "DNS:a.test") { certificate, key in
                let origin = try await NginxServer.start(names: ["a.test"], certificate: certificate, key: key, keepaliveRequests: 20)
                defer { origin.stop() }
                let trusted = StaticSource(["a.test": .addresses(ipv4: [origin.address], ipv6: [], ttl: 300)], name: "httpdns")
                var configuration = InterceptingHTTPClient.Configuration()
                configuration.tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
                let client = try InterceptingHTTPClient(resolver: try HostResolver(trusted: trusted, fallbacks: []), configuration: configuration)
                let url = "https://a.test:\(origin.port)/"
                let failures = await withTaskGroup(of: String?.self) { group in
                    for _ in 0..<30 {
                        group.addTask {
                            do {
                                let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
                                _ = try await response.response.body.collect(upTo: 1024)
                                return response.response.status == .ok ? nil : "\(response.response.status)"
                            } catch {
                                return "\(error)"
                            }
                        }
                    }
                    return await group.compactMap { $0 }.reduce(into: [String]()) { $0.append($1) }
                }
                await client.shutdown()
                #expect(failures.isEmpty, "\(failures.count) of 30 failed; the first: \(failures.first ?? "")")
                #expect(metrics.counterTotal(label: "httpdns_interceptor_retries_total") > 0, "the burst met a GOAWAY")
            }
        }
    }

    /// H9: the first address of the answer is dead; the second serves, and the failover is counted. Happy Eyeballs
    /// is off here, so that each request tries the dead address first (HappyEyeballsTests has it on).
    @Test func whenTheFirstAddressIsDeadTheNextServes() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            try await Self.withStage(
                addresses: { [Self.deadAddress(besides: $0), $0.address] },
                configure: { $0.connectionAttemptDelay = nil }
            ) { stage in
                let (response, body) = try await stage.get(stage.url("a.test", "/"))
                #expect(body == "sni=a.test host=a.test:\(stage.origin.port)\n")
                #expect(response.connectedAddress == IPAddress(stage.origin.address))
                #expect(metrics.counterTotal(label: "httpdns_connect_failovers_total") == 1)
                #expect(metrics.counterTotal(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", "ok")]) == 1)
                // A body goes to the address that serves, whole: in memory, and streamed (never read by the dead one).
                let posted = try await stage.client.execute(
                    method: "POST", url: stage.url("a.test", "/echo"), body: ByteBuffer(string: "kept"), timeout: .seconds(30)
                )
                #expect(String(buffer: try await posted.response.body.collect(upTo: 1 << 20)) == "method=POST body=kept")
                var streamed = HTTPClientRequest(url: stage.url("a.test", "/echo"))
                streamed.method = .POST
                streamed.body = .stream(["one;", "two"].map { ByteBuffer(string: $0) }.async, length: .unknown)
                let echoed = try await stage.client.execute(streamed, timeout: .seconds(30))
                #expect(String(buffer: try await echoed.response.body.collect(upTo: 1 << 20)) == "method=POST body=one;two")
                // The address that served is warm: later requests go to it first, past the dead one.
                #expect(metrics.counterTotal(label: "httpdns_connect_failovers_total") == 1)
            }
            // Every address dead: a connect failure that names them all.
            try await Self.withStage(addresses: { [Self.deadAddress(besides: $0)] }) { stage in
                let error = await #expect(throws: InterceptorError.self) { try await stage.get(stage.url("a.test", "/")) }
                #expect(error?.code == .connectFailed, "\(String(describing: error))")
                #expect(error?.message.contains(Self.deadAddress(besides: stage.origin)) == true)
            }
        }
    }

    /// H1–H3: the trusted source is down and the local resolver lies with a private address for the name. The
    /// guard refuses the answer, so the request fails before it connects anywhere: a listener on the lying address
    /// and the origin's port never sees a connection.
    @Test func aLyingLocalResolverNeverGetsTheRequest() async throws {
        let liar = StaticSource(name: "cares")
        try await Self.withStage(fallback: liar) { stage in
            let lyingAddress = Self.deadAddress(besides: stage.origin)
            let trap = try LoopbackTrap(address: lyingAddress, port: stage.origin.port)
            stage.trusted.set("shop.test", .failure(.serverUnreachable))
            liar.set("shop.test", .addresses(ipv4: [lyingAddress], ipv6: [], ttl: 300))
            let error = await #expect(throws: InterceptorError.self) { try await stage.get(stage.url("shop.test", "/")) }
            #expect(error?.code == .resolutionFailed, "\(String(describing: error))")
            #expect(error?.resolutionError?.code == .rejectedByGuard)
            #expect(liar.queryCount("shop.test") == 1)
            #expect(trap.connectionsWaiting() == 0)
            // And while the trusted source answers, the liar is not even asked.
            liar.set("a.test", .addresses(ipv4: [lyingAddress], ipv6: [], ttl: 300))
            _ = try await stage.get(stage.url("a.test", "/"))
            #expect(liar.queryCount("a.test") == 0)
            #expect(trap.connectionsWaiting() == 0)
        }
    }

    /// A chain across hosts: each hop is resolved again and carries its own name in SNI and Host.
    @Test func aCrossHostRedirectChainIsFollowedThroughThePipeline() async throws {
        try await Self.withStage { stage in
            let url = stage.url("a.test", "/redirect/302/b.test/redirect/301/a.test/final")
            let (response, body) = try await stage.get(url)
            #expect(body == "sni=a.test host=a.test:\(stage.origin.port)\n")
            #expect(response.redirects == 2)
            #expect(response.request.url == stage.url("a.test", "/final"))
            #expect(stage.trusted.queryCount("b.test") == 1)

            // 0 hops allowed: the redirect itself is the answer.
            var request = HTTPClientRequest(url: url)
            request.method = .GET
            let noFollow = try InterceptingHTTPClient(resolver: stage.client.resolver, configuration: {
                var configuration = stage.client.configuration
                configuration.maxRedirects = 0
                return configuration
            }())
            let result: Result<InterceptingHTTPClient.Response, any Error>
            do {
                result = .success(try await noFollow.execute(request, timeout: .seconds(30)))
            } catch {
                result = .failure(error)
            }
            await noFollow.shutdown()
            let redirect = try result.get()
            #expect(redirect.response.status == .found)
            #expect(redirect.response.headers.first(name: "location") == stage.url("b.test", "/redirect/301/a.test/final"))
        }
    }

    @Test func redirectLoopsAndDowngradesEndInClearErrors() async throws {
        try await Self.withStage(configure: { $0.maxRedirects = 3 }) { stage in
            let loop = await #expect(throws: InterceptorError.self) { try await stage.get(stage.url("a.test", "/loop")) }
            #expect(loop?.code == .tooManyRedirects, "\(String(describing: loop))")
            let insecure = await #expect(throws: InterceptorError.self) { try await stage.get(stage.url("a.test", "/insecure")) }
            #expect(insecure?.code == .insecureRedirect, "\(String(describing: insecure))")
        }
    }

    /// A POST body arrives intact; a 307 to another host sends it again there, and a 303 turns the POST into a GET
    /// without a body.
    @Test func aPostBodyArrivesIntactAcrossRedirects() async throws {
        try await Self.withStage { stage in
            let text = String(repeating: "payload-é-0123456789 ", count: 2000)
            let body = ByteBuffer(string: text)
            let direct = try await stage.client.execute(method: "POST", url: stage.url("a.test", "/echo"), body: body, timeout: .seconds(30))
            let directBody = String(buffer: try await direct.response.body.collect(upTo: 1 << 20))
            #expect(directBody == "method=POST body=\(text)", "\(directBody.prefix(300))")
            #expect(direct.cacheStoragePolicy == .notAllowed, "a POST's response is not stored")

            let moved = try await stage.client.execute(
                method: "POST", url: stage.url("a.test", "/redirect/307/b.test/echo"), body: body, timeout: .seconds(30)
            )
            #expect(String(buffer: try await moved.response.body.collect(upTo: 1 << 20)) == "method=POST body=\(text)")
            #expect(moved.response.headers.first(name: "x-seen") == "sni=b.test host=b.test:\(stage.origin.port)")

            let seeOther = try await stage.client.execute(
                method: "POST", url: stage.url("a.test", "/redirect/303/b.test/echo"), body: body, timeout: .seconds(30)
            )
            #expect(String(buffer: try await seeOther.response.body.collect(upTo: 1 << 20)) == "method=GET body=")

            // A streamed body is sent as it comes.
            var streamed = HTTPClientRequest(url: stage.url("b.test", "/echo"))
            streamed.method = .POST
            let chunks = (0..<8).map { ByteBuffer(string: "chunk \($0);") }
            streamed.body = .stream(chunks.async, length: .unknown)
            let echoed = try await stage.client.execute(streamed, timeout: .seconds(30))
            #expect(String(buffer: try await echoed.response.body.collect(upTo: 1 << 20)) == "method=POST body=" + chunks.map { String(buffer: $0) }.joined())
        }
    }

    /// 50 MB streams to the caller in pieces, as it arrives.
    @Test func aLargeBodyStreams() async throws {
        try await Self.withStage { stage in
            let response = try await stage.client.execute(HTTPClientRequest(url: stage.url("a.test", "/large")), timeout: .seconds(30))
            var bytes = 0
            var pieces = 0
            var largest = 0
            for try await piece in response.response.body {
                bytes += piece.readableBytes
                pieces += 1
                largest = max(largest, piece.readableBytes)
                // Zeros throughout (checked at each piece's ends: a byte-by-byte check is slow in debug builds).
                #expect(piece.readableBytesView.first == 0 && piece.readableBytesView.last == 0)
            }
            #expect(bytes == NginxServer.largeFileBytes)
            #expect(pieces > 100 && largest <= 1 << 20, "\(pieces) pieces, the largest \(largest) bytes")
        }
    }

    /// With room for one client, a second host's request retires the first host's client; one whose body is still
    /// streaming is shut down only once that body is done with (read to its end here, then dropped), so every byte
    /// arrives, and then it is gone.
    @Test func aClientRetiredWhileItsBodyStreamsIsShutDownOnceTheBodyIsDone() async throws {
        try await Self.withStage(configure: { $0.maxClients = 1 }) { stage in
            do {
                let streaming = try await stage.client.execute(HTTPClientRequest(url: stage.url("a.test", "/large")), timeout: .seconds(30))
                var pieces = streaming.response.body.makeAsyncIterator()
                var bytes = try await pieces.next()?.readableBytes ?? 0
                // b.test takes the one place: a.test's client is retired, still leased by the body.
                let (_, body) = try await stage.get(stage.url("b.test", "/"))
                #expect(body == "sni=b.test host=b.test:\(stage.origin.port)\n")
                #expect(stage.client.clientCount == 2, "the retired client is kept while its body streams")
                while let piece = try await pieces.next() { bytes += piece.readableBytes }
                #expect(bytes == NginxServer.largeFileBytes)
            }
            // The body and its response gone, so is the retired client.
            #expect(stage.client.clientCount == 1)
            // An idle client retired is shut down at once: a.test's new client takes b.test's place.
            let (_, again) = try await stage.get(stage.url("a.test", "/"))
            #expect(again == "sni=a.test host=a.test:\(stage.origin.port)\n")
            #expect(stage.client.clientCount == 1)
        }
    }

    /// Cancelling the caller's task while the body streams ends the request: the body's iteration throws, and the
    /// client's lease ends with it (the interceptor shuts down afterwards without waiting on it).
    @Test func cancellationEndsTheRequest() async throws {
        try await Self.withStage { stage in
            let (firstPiece, signal) = AsyncStream<Void>.makeStream()
            let task = Task {
                let response = try await stage.client.execute(HTTPClientRequest(url: stage.url("a.test", "/large")), timeout: .seconds(30))
                var bytes = 0
                for try await piece in response.response.body {
                    bytes += piece.readableBytes
                    signal.yield()
                }
                return bytes
            }
            var pieces = firstPiece.makeAsyncIterator()
            _ = await pieces.next()
            task.cancel()
            let result = await task.result
            #expect(throws: (any Error).self, "cancelled mid-body, so not every byte arrived") { _ = try result.get() }
            // Before the head, cancellation is the interceptor's own error.
            let early = Task { try await stage.client.execute(HTTPClientRequest(url: stage.url("b.test", "/")), timeout: .seconds(30)) }
            early.cancel()
            if case .failure(let error) = await early.result {
                #expect((error as? InterceptorError)?.code == .cancelled, "\(error)")
            }
        }
    }
}

/// A socket listening on a loopback address and port that never accepts: a test can tell whether anyone connected.
final class LoopbackTrap: Sendable {
    private let fd: Int32

    init(address: String, port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_addr.s_addr = inet_addr(address)
        socketAddress.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw PeerStartError(description: "cannot listen on \(address):\(port): \(reason)", retryable: false)
        }
    }

    /// Connections made and not yet accepted.
    func connectionsWaiting() -> Int {
        var count = 0
        while case let accepted = accept(fd, nil, nil), accepted >= 0 {
            close(accepted)
            count += 1
        }
        return count
    }

    deinit { close(fd) }
}
