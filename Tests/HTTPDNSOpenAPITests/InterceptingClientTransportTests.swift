#if OpenAPI
import Foundation
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSOpenAPI
import HTTPDNSTesting
import HTTPTypes
import Metrics
import MetricsTestKit
import NIOCore
import NIOSSL
@_spi(Generated) import OpenAPIRuntime
import Testing

/// The OpenAPI transport end to end: operations through `InterceptingClientTransport` to a real nginx over HTTPS,
/// with a certificate made at test time for `a.test` and `b.test`. nginx reports the SNI and Host it saw, and `/echo`
/// the method and body it got. The trusted source answers nginx's address; the local resolver (the fallback) lies
/// with a dead one, and is never asked.
@Suite("The OpenAPI transport against nginx", .timeLimit(.minutes(2)))
struct InterceptingClientTransportTests {
    struct Stage {
        let origin: NginxServer
        let trusted: StaticSource
        let liar: StaticSource
        let interceptor: InterceptingHTTPClient
        let transport: InterceptingClientTransport
        /// The interceptor's configuration, with nginx's certificate trusted.
        let configuration: InterceptingHTTPClient.Configuration

        /// `https://NAME:port`, a server URL as a generated client takes it.
        func serverURL(_ name: String = "a.test") -> URL { URL(string: "https://\(name):\(origin.port)")! }

        /// One operation through the transport's `send`, as a generated client calls it, and the body as text.
        func send(
            _ method: HTTPRequest.Method,
            _ path: String,
            body: HTTPBody? = nil,
            name: String = "a.test"
        ) async throws -> (HTTPResponse, String?) {
            let request = HTTPRequest(method: method, scheme: nil, authority: nil, path: path)
            let (response, responseBody) = try await transport.send(request, body: body, baseURL: serverURL(name), operationID: "test")
            guard let responseBody else { return (response, nil) }
            return (response, try await String(collecting: responseBody, upTo: 1 << 20))
        }
    }

    /// nginx for a.test and b.test; the trusted source answers both with nginx's address (a.test with
    /// `addresses(origin)` when given); the fallback lies with a dead address.
    static func withStage(
        addresses: ((NginxServer) -> [String])? = nil,
        transport: InterceptingClientTransport.Configuration = InterceptingClientTransport.Configuration(),
        _ body: (Stage) async throws -> Void
    ) async throws {
        try await TestCertificate.with(subjectAltName: "DNS:a.test,DNS:b.test") { certificate, key in
            try await withNginx(names: ["a.test", "b.test"], certificate: certificate, key: key) { origin in
                let trusted = StaticSource(
                    [
                        "a.test": .addresses(ipv4: addresses?(origin) ?? [origin.address], ipv6: [], ttl: 300),
                        "b.test": .addresses(ipv4: [origin.address], ipv6: [], ttl: 300),
                    ],
                    otherwise: .failure(.serverUnreachable),
                    name: "httpdns"
                )
                let dead = deadAddress(besides: origin)
                let liar = StaticSource(
                    ["a.test": .addresses(ipv4: [dead], ipv6: [], ttl: 300), "b.test": .addresses(ipv4: [dead], ipv6: [], ttl: 300)],
                    name: "system"
                )
                var configuration = InterceptingHTTPClient.Configuration()
                configuration.tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
                try await withHostResolver(trusted: trusted, fallbacks: [liar]) { resolver in
                    try await withInterceptingHTTPClient(resolver: resolver, configuration: configuration) { interceptor in
                        let stage = Stage(
                            origin: origin, trusted: trusted, liar: liar, interceptor: interceptor,
                            transport: try InterceptingClientTransport(interceptor, configuration: transport), configuration: configuration
                        )
                        try await body(stage)
                    }
                }
            }
        }
    }

    /// Another loopback address than `origin`'s, where nothing listens on its port.
    static func deadAddress(besides origin: NginxServer) -> String {
        let last = Int(origin.address.split(separator: ".").last!)!
        return "127.0.0.\(last == 250 ? 249 : last + 1)"
    }

    /// A body of `count` printable bytes (nginx's echo puts it into a text answer), in `pieces` chunks, of unknown
    /// length and iterable once: as a generated client streams one.
    static func stream(_ text: String, pieces: Int) -> HTTPBody {
        let bytes = Array(text.utf8)
        let size = (bytes.count + pieces - 1) / pieces
        let chunks = stride(from: 0, to: bytes.count, by: size).map { HTTPBody.ByteChunk(bytes[$0..<min($0 + size, bytes.count)]) }
        let (stream, continuation) = AsyncThrowingStream<HTTPBody.ByteChunk, any Error>.makeStream()
        for chunk in chunks { continuation.yield(chunk) }
        continuation.finish()
        return HTTPBody(stream, length: .unknown)
    }

    static func text(_ count: Int) -> String {
        String(String(repeating: "0123456789abcdef", count: count / 16 + 1).prefix(count))
    }

    /// A GET and a POST with a body reach nginx at the trusted address, with the real name in SNI and Host; the
    /// lying local resolver is never asked; a HEAD has no body.
    @Test func aGetAndAPostReachTheTrustedAddressWithTheName() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            try await Self.withStage { stage in
                let port = stage.origin.port
                let (got, greeting) = try await stage.send(.get, "/greeting?lang=en")
                #expect(got.status == .ok)
                #expect(greeting == "sni=a.test host=a.test:\(port)\n")
                #expect(got.headerFields[.contentType] == "text/plain")

                let (posted, echoed) = try await stage.send(.post, "/echo", body: HTTPBody("hello, openapi"))
                #expect(posted.status == .ok)
                #expect(echoed == "method=POST body=hello, openapi")
                #expect(posted.headerFields[HTTPField.Name("X-Seen")!] == "sni=a.test host=a.test:\(port)")

                let (head, none) = try await stage.send(.head, "/")
                #expect(head.status == .ok && none == nil)

                #expect(stage.trusted.queryCount("a.test") == 1, "resolved once, by the trusted source")
                #expect(stage.liar.queryCount("a.test") == 0)
                #expect(metrics.counterTotal(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", "ok")]) == 3)
            }
        }
    }

    /// The first address refuses connections: a POST's body, in memory (under the bound), arrives whole at the
    /// second, sent once there; and, being in memory, a 307 sends it again to where it points.
    @Test func aBufferedBodyArrivesOnceWholeAtTheSecondAddress() async throws {
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            try await Self.withStage(addresses: { [Self.deadAddress(besides: $0), $0.address] }) { stage in
                let text = Self.text(64 * 1024)
                let (response, echoed) = try await stage.send(.post, "/echo", body: HTTPBody(text))
                #expect(response.status == .ok)
                #expect(echoed == "method=POST body=\(text)", "\(echoed?.prefix(100) ?? "no body")")
                // Sent once, to nginx: one request, not sent again on its connection. (Whether the dead address cost a
                // failover or lost a connection race is the interceptor's to say, and tested there.)
                #expect(metrics.counterTotal(label: "httpdns_interceptor_retries_total") == 0)
                #expect(metrics.counterTotal(label: "httpdns_interceptor_requests_total", dimensions: [("outcome", "ok")]) == 1)

                // Of unknown length and iterable once, but under the bound: read into memory, so a 307 sends it again.
                let small = Self.text(3000)
                let (moved, movedBody) = try await stage.send(.post, "/redirect/307/b.test/echo", body: Self.stream(small, pieces: 3))
                #expect(moved.status == .ok)
                #expect(movedBody == "method=POST body=\(small)")
            }
        }
    }

    /// Past the bound, a body is streamed as it is read, whole, and is not sent again: a 307 is then the answer.
    /// Streamed, it still goes whole to the second address when the first refuses the connection (nothing of it was
    /// read there).
    @Test func aBodyAboveTheBoundIsStreamedAndNotSentAgain() async throws {
        var configuration = InterceptingClientTransport.Configuration()
        configuration.maxBufferedRequestBodyBytes = 1024
        try await Self.withStage(addresses: { [Self.deadAddress(besides: $0), $0.address] }, transport: configuration) { stage in
            let text = Self.text(8 * 1024)
            // Unknown length, found past the bound as it is read: the part read goes first, then the rest.
            let (streamed, streamedBody) = try await stage.send(.post, "/echo", body: Self.stream(text, pieces: 16))
            #expect(streamed.status == .ok)
            #expect(streamedBody == "method=POST body=\(text)", "\(streamedBody?.prefix(100) ?? "no body")")
            // A known length past the bound: streamed without reading any of it first.
            let (known, knownBody) = try await stage.send(.post, "/echo", body: HTTPBody(text))
            #expect(known.status == .ok && knownBody == "method=POST body=\(text)")

            // Not sent again after a 307: the redirect is the answer (b.test's address is nginx's alone).
            let (redirect, _) = try await stage.send(.post, "/redirect/307/b.test/echo", body: Self.stream(text, pieces: 4), name: "b.test")
            #expect(redirect.status.code == 307)
            #expect(redirect.headerFields[.location] == "https://b.test:\(stage.origin.port)/echo")
            let (known307, _) = try await stage.send(.post, "/redirect/307/b.test/echo", body: HTTPBody(text), name: "b.test")
            #expect(known307.status.code == 307)
            // The same under the bound is followed.
            let (followed, followedBody) = try await stage.send(.post, "/redirect/307/b.test/echo", body: HTTPBody("short"), name: "b.test")
            #expect(followed.status == .ok && followedBody == "method=POST body=short")
        }
    }

    /// A response body streams as it arrives, in pieces, and is iterable once.
    @Test func aLargeResponseStreams() async throws {
        try await Self.withStage { stage in
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/large")
            let (response, body) = try await stage.transport.send(request, body: nil, baseURL: stage.serverURL(), operationID: "large")
            let stream = try #require(body)
            #expect(stream.length == .known(Int64(NginxServer.largeFileBytes)))
            #expect(stream.iterationBehavior == .single)
            #expect(response.status == .ok)
            var bytes = 0
            var pieces = 0
            for try await piece in stream {
                bytes += piece.count
                pieces += 1
            }
            #expect(bytes == NginxServer.largeFileBytes)
            #expect(pieces > 100, "\(pieces) pieces")
        }
    }

    /// The hijack and certificate cases fail as they do for the interceptor: with the trusted source down, the local
    /// resolver's private answer is refused by the guard; a name the certificate does not hold is a certificate
    /// rejection, not a connection to whoever answers.
    @Test func aLyingResolverAndAWrongCertificateFailAsForTheInterceptor() async throws {
        try await Self.withStage { stage in
            stage.trusted.set("shop.test", .failure(.serverUnreachable))
            stage.liar.set("shop.test", .addresses(ipv4: [Self.deadAddress(besides: stage.origin)], ipv6: [], ttl: 300))
            let hijack = await #expect(throws: InterceptorError.self) { try await stage.send(.get, "/", name: "shop.test") }
            #expect(hijack?.code == .resolutionFailed, "\(String(describing: hijack))")
            #expect(hijack?.resolutionError?.code == .rejectedByGuard, "\(String(describing: hijack))")

            stage.trusted.set("c.test", .addresses(ipv4: [stage.origin.address], ipv6: [], ttl: 300))
            let wrong = await #expect(throws: InterceptorError.self) { try await stage.send(.get, "/", name: "c.test") }
            #expect(wrong?.code == .certificateRejected, "\(String(describing: wrong))")
        }
    }

    /// The interceptor's error comes back inside the generated client's `ClientError`, as its underlying error.
    @Test func theInterceptorsErrorIsTheClientErrorsUnderlyingError() async throws {
        try await Self.withStage { stage in
            let client = Client(serverURL: stage.serverURL("nowhere.test"), transport: stage.transport)
            let error = await #expect(throws: ClientError.self) { try await client.getGreeting() }
            let underlying = error?.underlyingError as? InterceptorError
            #expect(underlying?.code == .resolutionFailed, "\(String(describing: error))")
            #expect(error?.operationID == "getGreeting")
            // Directly through the transport, the interceptor's own error.
            await #expect(throws: InterceptorError.self) { try await stage.send(.get, "/", name: "nowhere.test") }
        }
    }

    /// The timeout covers reading a body into memory: a producer that stalls fails the operation as a `timeout`.
    @Test func aStalledRequestBodyTimesOut() async throws {
        var configuration = InterceptingClientTransport.Configuration()
        configuration.timeout = .milliseconds(300)
        try await Self.withStage(transport: configuration) { stage in
            let (stream, continuation) = AsyncThrowingStream<HTTPBody.ByteChunk, any Error>.makeStream()
            defer { continuation.finish() }
            continuation.yield(HTTPBody.ByteChunk("the first piece, and no more".utf8))
            let error = await #expect(throws: InterceptorError.self) {
                try await stage.send(.post, "/echo", body: HTTPBody(stream, length: .unknown))
            }
            #expect(error?.code == .timeout, "\(String(describing: error))")
        }
    }

    /// A timeout that is not positive, or a negative bound, is refused when the transport is made.
    @Test func aConfigurationThatCannotBeUsedIsRefused() async throws {
        try await Self.withStage { stage in
            var timeout = InterceptingClientTransport.Configuration()
            timeout.timeout = .zero
            let refused = #expect(throws: ConfigurationError.self) { try InterceptingClientTransport(stage.interceptor, configuration: timeout) }
            #expect(refused?.key == "timeout" && refused?.code == .outOfRange)
            var bound = InterceptingClientTransport.Configuration()
            bound.maxBufferedRequestBodyBytes = -1
            let negative = #expect(throws: ConfigurationError.self) { try InterceptingClientTransport(stage.interceptor, configuration: bound) }
            #expect(negative?.key == "maxBufferedRequestBodyBytes")
        }
    }

    /// The example of the module's documentation (HTTPDNSOpenAPI.md), as written there, with a hand-written
    /// stand-in for the generated `Client`.
    @Test func theDocumentationExample() async throws {
        try await TestCertificate.with(subjectAltName: "DNS:api.example.com") { certificate, key in
            try await withNginx(names: ["api.example.com"], certificate: certificate, key: key) { origin in
                let source = StaticSource(["api.example.com": .addresses(ipv4: [origin.address], ipv6: [], ttl: 300)], name: "httpdns")
                var configuration = InterceptingHTTPClient.Configuration()
                configuration.tls.additionalTrustRoots = [.file(certificate)]
                let serverURL = URL(string: "https://api.example.com:\(origin.port)/v1")!

                // The example:
                let greeting = try await withHostResolver(trusted: source, fallbacks: []) { resolver in
                    try await withInterceptingHTTPClient(resolver: resolver, configuration: configuration) { interceptor in
                        let transport = try InterceptingClientTransport(interceptor)
                        let client = Client(serverURL: serverURL, transport: transport)
                        return try await client.getGreeting()
                    }
                }

                #expect(greeting == "sni=api.example.com host=api.example.com:\(origin.port)\n")
            }
        }
    }
}

/// What swift-openapi-generator makes of a document with one operation, `GET /greeting` answering text: a `Client`
/// over the runtime's `UniversalClient`, written by hand (the generator's plugin builds swift-syntax, which takes too
/// long here).
struct Client {
    private let client: UniversalClient

    init(serverURL: URL, transport: any ClientTransport) {
        client = UniversalClient(serverURL: serverURL, transport: transport)
    }

    struct Input: Sendable {}

    struct UnexpectedResponse: Error {
        let status: HTTPResponse.Status
    }

    /// `GET /greeting`: the body, as text.
    func getGreeting() async throws -> String {
        try await client.send(
            input: Input(),
            forOperation: "getGreeting",
            serializer: { _ in
                var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/greeting")
                request.headerFields[.accept] = "text/plain"
                return (request, nil)
            },
            deserializer: { response, body in
                guard response.status == .ok, let body else { throw UnexpectedResponse(status: response.status) }
                return try await String(collecting: body, upTo: 1 << 16)
            }
        )
    }
}
#endif
