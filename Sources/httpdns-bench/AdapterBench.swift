import ArgumentParser
import AsyncHTTPClient
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSTesting
import Metrics
import NIOCore
import NIOSSL
import Prometheus

#if GRPC
    import GRPCCore
    import GRPCNIOTransportHTTP2
    import HTTPDNSGRPC
#endif
#if OpenAPI
    import FoundationEssentials
    import HTTPDNSOpenAPI
    import HTTPTypes
    import OpenAPIAsyncHTTPClient
    @_spi(Generated) import OpenAPIRuntime
#endif
#if Vapor
    import HTTPDNSVapor
    import Logging
    import Vapor
#endif

/// Each client stack's adapter against the same stack with a fixed address and no HTTPDNS, both to the same server
/// in one run, the cache warm: what the adapter adds to a request's median latency. A stack is measured when its
/// trait is on (`swift build -c release --traits GRPC,OpenAPI,Vapor`).
///
/// - gRPC: unary calls over TLS to a grpc-swift 2 server, `withHTTPDNSGRPCClient` against `withGRPCClient` with an
///   `ipv4` target and the name as `http2.authority`.
/// - OpenAPI: an operation (`GET /`) to nginx over HTTPS, `InterceptingClientTransport` against
///   swift-openapi-async-http-client's `AsyncHTTPClientTransport` over an `HTTPClient` whose `dnsOverride` names the
///   address (`openapi-same-bounds`: that `HTTPClient` given the interceptor's connect and read timeouts).
/// - Vapor: `app.client.get` to nginx, an application whose clients are `.httpdns(…)` against one with Vapor's own
///   client and that `dnsOverride` (`vapor`: Vapor's own as it comes, no deadline and no read timeout;
///   `vapor-same-bounds`: Vapor's own given the interceptor's deadline and timeouts); `vapor-async-ahc` is a control.
struct AdapterBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adapters",
        abstract: "Median latency through each client stack's adapter (gRPC, OpenAPI, Vapor: those built in) as a ratio against the same stack with a fixed address."
    )

    @ArgumentParser.Option(help: "Requests per round and way, one after another, the two ways taking turns request by request.")
    var requests = 2000

    @ArgumentParser.Option(help: "Rounds per stack.")
    var rounds = 5

    @ArgumentParser.Option(help: "A stack to measure (grpc, openapi, openapi-same-bounds, vapor, vapor-same-bounds, vapor-async-ahc); repeat for more. Default: every stack built in.")
    var stack: [String] = []

    func validate() throws {
        guard requests > 0, rounds > 0 else { throw ValidationError("counts must be positive") }
        for name in stack where !Self.builtIn.contains(name) {
            throw ValidationError(
                "no stack \(name) in this build: \(Self.builtIn.isEmpty ? "none is (build with --traits GRPC,OpenAPI,Vapor)" : "built in are \(Self.builtIn.joined(separator: ", "))")"
            )
        }
    }

    /// The stacks whose traits this executable was built with.
    static var builtIn: [String] {
        var stacks: [String] = []
        #if GRPC
            stacks.append("grpc")
        #endif
        #if OpenAPI
            stacks.append("openapi")
            stacks.append("openapi-same-bounds")
        #endif
        #if Vapor
            stacks.append("vapor")
            stacks.append("vapor-same-bounds")
            stacks.append("vapor-async-ahc")
        #endif
        return stacks
    }

    /// One request each way: the baseline's and the adapter's.
    struct Ways {
        let baseline: InterceptorBench.Get
        let adapter: InterceptorBench.Get
    }

    /// A stack's latencies over every round, and each round's ratio of medians.
    struct Figures {
        var baseline: [Double] = []
        var adapter: [Double] = []
        var roundRatios: [Double] = []
    }

    func run() async throws {
        // A backend that embeds the adapters exports their metrics: their counters cost what they would there.
        MetricsSystem.bootstrap(PrometheusMetricsFactory())
        let stacks = stack.isEmpty ? Self.builtIn : stack
        guard !stacks.isEmpty else {
            throw ValidationError("no stack is built in: build with swift build -c release --traits GRPC,OpenAPI,Vapor")
        }
        var results: [(String, Figures)] = []
        for name in stacks {
            results.append((name, try await measure(name)))
        }
        print("httpdns-bench adapters --requests \(requests) --rounds \(rounds)" + stack.map { " --stack \($0)" }.joined())
        print("median latency in µs, the cache warm; ratio = adapter / baseline, median of the rounds' ratios")
        print("stack                baseline  adapter  ratio   rounds")
        for (name, figures) in results {
            print(
                name.padding(21) + formatted(figures.baseline.median, digits: 0).padding(10)
                    + formatted(figures.adapter.median, digits: 0).padding(9) + (formatted(figures.roundRatios.median) + "×").padding(8)
                    + figures.roundRatios.map { formatted($0) }.joined(separator: " ")
            )
        }
    }

    private func measure(_ stack: String) async throws -> Figures {
        switch stack {
        #if GRPC
            case "grpc": return try await measureGRPC()
        #endif
        #if OpenAPI
            case "openapi": return try await withOrigin { try await measureOpenAPI($0, $1, sameBounds: false) }
            case "openapi-same-bounds": return try await withOrigin { try await measureOpenAPI($0, $1, sameBounds: true) }
        #endif
        #if Vapor
            case "vapor": return try await withOrigin { try await measureVapor($0, $1, .adapter) }
            case "vapor-same-bounds": return try await withOrigin { try await measureVapor($0, $1, .adapterAgainstBoundedBaseline) }
            case "vapor-async-ahc": return try await withOrigin { try await measureVapor($0, $1, .asyncAHCControl) }
        #endif
        default: throw ValidationError("no stack \(stack) in this build")
        }
    }

    /// Warm-up, then `rounds` rounds of `requests` each way, taking turns request by request; any failure stops the
    /// benchmark, since a failed request has no latency to compare.
    private func rounds(_ ways: Ways) async throws -> Figures {
        _ = await InterceptorBench.latencies((ways.baseline, ways.adapter), count: min(requests, 500))
        var figures = Figures()
        for round in 0..<rounds {
            // Which way goes first in each pair alternates by round.
            let pair = round % 2 == 0 ? (ways.baseline, ways.adapter) : (ways.adapter, ways.baseline)
            let (first, second) = await InterceptorBench.latencies(pair, count: requests)
            let (baseline, adapter) = round % 2 == 0 ? (first, second) : (second, first)
            for failures in [baseline.failures, adapter.failures] where failures.count > 0 {
                throw InterceptorBench.Failure(description: "\(failures.count) requests failed, the first with \(failures.first ?? "?")")
            }
            figures.baseline += baseline.samples
            figures.adapter += adapter.samples
            figures.roundRatios.append(adapter.samples.median / baseline.samples.median)
        }
        return figures
    }

    /// The origin of the HTTP stacks: nginx for `a.test` over HTTPS, a resolver whose trusted source answers its
    /// address (cached before the measurement), and TLS that trusts its certificate.
    private func withOrigin(
        _ body: (NginxServer, (resolver: HostResolver, tls: TLSConfiguration)) async throws -> Figures
    ) async throws -> Figures {
        try await TestCertificate.with(subjectAltName: "DNS:a.test") { certificate, key in
            try await withNginx(names: ["a.test"], certificate: certificate, key: key, keepaliveRequests: 100_000_000) { nginx in
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(certificate))]
                let trusted = StaticSource(["a.test": .addresses(ipv4: [nginx.address], ipv6: [], ttl: 3600)], name: "httpdns", countsQueries: false)
                return try await withHostResolver(trusted: trusted, fallbacks: []) { resolver in
                    _ = try await resolver.resolve(try HostName("a.test"))
                    return try await body(nginx, (resolver, tls))
                }
            }
        }
    }

    /// An `HTTPClient` as the interceptor makes its own, with `dnsOverride` sending `a.test` to nginx.
    private static func fixedAddressClient(_ nginx: NginxServer, tls: TLSConfiguration, sameBounds: Bool = false) -> HTTPClient {
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow, decompression: .disabled)
        if sameBounds { configuration.timeout = interceptorTimeouts }
        configuration.dnsOverride = ["a.test": nginx.address]
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// The interceptor's default connect and read timeouts, for a baseline given the same bounds.
    private static var interceptorTimeouts: HTTPClient.Configuration.Timeout {
        let bounds = InterceptingHTTPClient.Configuration()
        return .init(
            connect: .nanoseconds(Int64(bounds.connectTimeout.clampedNanoseconds)),
            read: .nanoseconds(Int64(bounds.readTimeout.clampedNanoseconds))
        )
    }

    private static func interceptorConfiguration(_ tls: TLSConfiguration) -> InterceptingHTTPClient.Configuration {
        var configuration = InterceptingHTTPClient.Configuration()
        configuration.tls = tls
        return configuration
    }

    #if GRPC
        /// Echoes each message of `bench.Echo/Get`.
        struct EchoService: RegistrableRPCService {
            static let method = MethodDescriptor(fullyQualifiedService: "bench.Echo", method: "Get")

            func registerMethods<Transport: GRPCCore.ServerTransport>(with router: inout RPCRouter<Transport>) {
                router.registerHandler(forMethod: Self.method, deserializer: UTF8Coder(), serializer: UTF8Coder()) { request, _ in
                    StreamingServerResponse { writer in
                        for try await message in request.messages { try await writer.write(message) }
                        return [:]
                    }
                }
            }
        }

        struct UTF8Coder: MessageSerializer, MessageDeserializer {
            func serialize<Bytes: GRPCContiguousBytes>(_ message: String) throws -> Bytes { Bytes(message.utf8) }
            func deserialize<Bytes: GRPCContiguousBytes>(_ bytes: Bytes) throws -> String {
                bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            }
        }

        private static func unary(_ client: GRPCClient<HTTP2ClientTransport.Posix>) async throws -> Int {
            try await client.unary(
                request: ClientRequest(message: "ping"),
                descriptor: EchoService.method,
                serializer: UTF8Coder(),
                deserializer: UTF8Coder(),
                options: .defaults
            ) { response in try response.message.utf8.count }
        }

        private func measureGRPC() async throws -> Figures {
            let host = try HostName("grpc.test")
            let address = "127.0.0.1"
            return try await TestCertificate.with(subjectAltName: "DNS:grpc.test") { certificate, key in
                let transport = HTTP2ServerTransport.Posix(
                    address: .ipv4(host: address, port: 0),
                    transportSecurity: .tls(certificateChain: [.file(path: certificate, format: .pem)], privateKey: .file(path: key, format: .pem))
                )
                let server = GRPCServer(transport: transport, services: [EchoService()])
                let serving = Task { try await server.serve() }
                do {
                    let figures = try await measureGRPC(host: host, address: address, transport: transport, certificate: certificate)
                    server.beginGracefulShutdown()
                    try await serving.value
                    return figures
                } catch {
                    server.beginGracefulShutdown()
                    _ = await serving.result
                    throw error
                }
            }
        }

        private func measureGRPC(host: HostName, address: String, transport: HTTP2ServerTransport.Posix, certificate: String) async throws -> Figures {
                guard let port = try await transport.listeningAddress.ipv4?.port else {
                    throw InterceptorBench.Failure(description: "the gRPC server is not listening on IPv4")
                }
                var tls = HTTP2ClientTransport.Posix.TransportSecurity.TLS.defaults
                tls.trustRoots = .certificates([.file(path: certificate, format: .pem)])
                // The baseline: the address fixed, the name as the authority (and so SNI and the name verified).
                var config = HTTP2ClientTransport.Posix.Config.defaults
                config.http2.authority = "grpc.test"
                let fixed = try HTTP2ClientTransport.Posix(
                    target: .ipv4(address: address, port: port), transportSecurity: .tls(tls), config: config
                )
                let trusted = StaticSource(["grpc.test": .addresses(ipv4: [address], ipv6: [], ttl: 3600)], name: "httpdns", countsQueries: false)
                return try await withHostResolver(trusted: trusted, fallbacks: []) { resolver in
                    _ = try await resolver.resolve(host)
                    return try await withGRPCClient(transport: fixed) { baseline in
                        try await withHTTPDNSGRPCClient(host: host, port: port, resolver: resolver, tls: tls) { adapter in
                            try await rounds(Ways(baseline: { try await Self.unary(baseline) }, adapter: { try await Self.unary(adapter) }))
                        }
                    }
                }
        }
    #endif

    #if OpenAPI
        /// `GET /`, as a generated client's operation sends it: the body's length.
        private static func operation(_ client: UniversalClient) async throws -> Int {
            try await client.send(
                input: (),
                forOperation: "getRoot",
                serializer: { _ in (HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), nil) },
                deserializer: { response, body in
                    guard response.status == .ok, let body else {
                        throw InterceptorBench.Failure(description: "GET / answered \(response.status)")
                    }
                    return try await ArraySlice(collecting: body, upTo: 1 << 16).count
                }
            )
        }

        /// - Parameter sameBounds: the baseline's `HTTPClient` given the interceptor's connect and read timeouts (both
        ///   ways have a 60 s deadline per request), which AsyncHTTPClient does not set by default.
        private func measureOpenAPI(_ nginx: NginxServer, _ setup: (resolver: HostResolver, tls: TLSConfiguration), sameBounds: Bool) async throws -> Figures {
            guard let serverURL = URL(string: "https://a.test:\(nginx.port)") else {
                throw InterceptorBench.Failure(description: "no URL for port \(nginx.port)")
            }
            let plain = Self.fixedAddressClient(nginx, tls: setup.tls, sameBounds: sameBounds)
            do {
                let figures = try await withInterceptingHTTPClient(resolver: setup.resolver, configuration: Self.interceptorConfiguration(setup.tls)) {
                    interceptor in
                    let baseline = UniversalClient(serverURL: serverURL, transport: AsyncHTTPClientTransport(configuration: .init(client: plain)))
                    let adapter = UniversalClient(serverURL: serverURL, transport: try InterceptingClientTransport(interceptor))
                    return try await rounds(Ways(baseline: { try await Self.operation(baseline) }, adapter: { try await Self.operation(adapter) }))
                }
                try await plain.shutdown()
                return figures
            } catch {
                try? await plain.shutdown()
                throw error
            }
        }
    #endif

    #if Vapor
        /// What is measured against Vapor's own client.
        enum VaporWay {
            /// `.httpdns(interceptor)` against Vapor's own client as configured by default: no request deadline, no
            /// read timeout.
            case adapter
            /// `.httpdns(interceptor)` against Vapor's own client given the interceptor's bounds (a 60 s deadline per
            /// request, a 30 s read timeout, a 5 s connect timeout): what the adapter adds besides its bounds.
            case adapterAgainstBoundedBaseline
            /// A control with no HTTPDNS: a Vapor client over AsyncHTTPClient's async API.
            case asyncAHCControl
        }

        private static func get(_ client: any Vapor.Client, _ url: URI, timeout: TimeAmount? = nil) async throws -> Int {
            let response = try await client.get(url) { $0.timeout = timeout }
            guard response.status == .ok else { throw InterceptorBench.Failure(description: "\(url) answered \(response.status)") }
            return response.body?.readableBytes ?? 0
        }

        /// A Vapor `Client` over AsyncHTTPClient's async API (the one the interceptor sends through) and no HTTPDNS:
        /// the control that tells what of the adapter's cost is that API's, against Vapor's own client on its futures.
        struct AsyncAHCClient: Vapor.Client {
            let http: HTTPClient
            let eventLoop: any EventLoop
            var byteBufferAllocator: ByteBufferAllocator { ByteBufferAllocator() }

            func send(_ request: Vapor.ClientRequest) -> EventLoopFuture<Vapor.ClientResponse> {
                eventLoop.makeFutureWithTask {
                    var outgoing = HTTPClientRequest(url: request.url.string)
                    outgoing.method = request.method
                    outgoing.headers = request.headers
                    let response = try await http.execute(outgoing, timeout: .seconds(60))
                    let body = try await response.body.collect(upTo: 32 << 20)
                    return Vapor.ClientResponse(status: response.status, headers: response.headers, body: body)
                }
            }

            func delegating(to eventLoop: any EventLoop) -> any Vapor.Client { AsyncAHCClient(http: http, eventLoop: eventLoop) }
            func logging(to logger: Logger) -> any Vapor.Client { self }
            func allocating(to byteBufferAllocator: ByteBufferAllocator) -> any Vapor.Client { self }
        }

        private func measureVapor(
            _ nginx: NginxServer,
            _ setup: (resolver: HostResolver, tls: TLSConfiguration),
            _ way: VaporWay
        ) async throws -> Figures {
            let url = URI(string: "https://a.test:\(nginx.port)/")
            return try await withInterceptingHTTPClient(resolver: setup.resolver, configuration: Self.interceptorConfiguration(setup.tls)) {
                interceptor in
                let plain = try await Application.make(.testing)
                let through = try await Application.make(.testing)
                do {
                    plain.http.client.configuration.tlsConfiguration = setup.tls
                    plain.http.client.configuration.dnsOverride = ["a.test": nginx.address]
                    plain.http.client.configuration.redirectConfiguration = .disallow
                    var baselineTimeout: TimeAmount?
                    if way == .adapterAgainstBoundedBaseline {
                        plain.http.client.configuration.timeout = Self.interceptorTimeouts
                        baselineTimeout = .nanoseconds(InterceptingVaporClient.Configuration().timeout.clampedNanoseconds)
                    }
                    if way == .asyncAHCControl {
                        let http = Self.fixedAddressClient(nginx, tls: setup.tls)
                        through.lifecycle.use(ShutDownClient(http: http))
                        through.clients.use { application in AsyncAHCClient(http: http, eventLoop: application.eventLoopGroup.next()) }
                    } else {
                        through.clients.use(try .httpdns(interceptor))
                    }
                    let figures = try await rounds(
                        Ways(baseline: { [baselineTimeout] in try await Self.get(plain.client, url, timeout: baselineTimeout) }, adapter: { try await Self.get(through.client, url) })
                    )
                    try await plain.asyncShutdown()
                    try await through.asyncShutdown()
                    return figures
                } catch {
                    try? await plain.asyncShutdown()
                    try? await through.asyncShutdown()
                    throw error
                }
            }
        }

        /// Shuts the control's client down with its application.
        struct ShutDownClient: LifecycleHandler {
            let http: HTTPClient
            func shutdownAsync(_ application: Application) async { try? await http.shutdown() }
        }
    #endif
}
