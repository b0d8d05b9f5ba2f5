import Foundation
import HTTPDNSCAres
import HTTPDNSCore
import HTTPDNSNIO
import HTTPDNSTesting
import NIOCore
import NIOPosix
import NIOSSL
import Testing

/// `ClientBootstrap.connect(host:port:)` through the resolver, against real servers on loopback: nginx over TLS with
/// a certificate made now for `a.test` (it answers with the SNI and Host it saw), a dnsmasq as the trusted source
/// and a lying dnsmasq as the local resolver, each asked by c-ares, and sockets that refuse or swallow connects. The
/// connects are the DocC article's example (`connectTLS`, ArticleExample.swift), run as written.
@Suite("Connecting through HTTPDNSNIOResolver", .timeLimit(.minutes(2)))
struct ConnectThroughResolverTests {
    static let group = MultiThreadedEventLoopGroup.singleton

    /// nginx for a.test at `address` (a random 127.0.0.x when nil), and a TLS context that trusts its certificate
    /// (`DNS:a.test`) and checks it.
    static func withOrigin(
        address: String? = nil,
        subjectAltName: String = "DNS:a.test",
        _ body: (NginxServer, NIOSSLContext) async throws -> Void
    ) async throws {
        try await TestCertificate.with(subjectAltName: subjectAltName) { certificate, key in
            let origin = try await NginxServer.start(names: ["a.test"], certificate: certificate, key: key, address: address)
            do {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificate))
                try await body(origin, try NIOSSLContext(configuration: tls))
            } catch {
                origin.stop()
                throw error
            }
            origin.stop()
        }
    }

    /// A resolver whose trusted source is c-ares to a dnsmasq serving `records`, and whose fallback, the local
    /// resolver, is c-ares to a dnsmasq serving `lies`. The guard has its defaults: 127.0.0.0/8 is private, so the
    /// local resolver's loopback answers are lies it refuses (the trusted source's answers are not judged).
    static func withResolver(
        records: [String],
        lies: [String] = [],
        patient: Bool = false,
        _ body: (HostResolver, _ trusted: DNSMasqServer, _ liar: DNSMasqServer) async throws -> Void
    ) async throws {
        try await withDNSMasq(records: records) { honest in
            try await withDNSMasq(records: lies) { liar in
                var trustedConfiguration = CAresSource.Configuration(servers: [honest.address])
                trustedConfiguration.name = "trusted"
                if patient {
                    // One try, given long: a machine busy with the other suites must not make c-ares ask again,
                    // which a test's query count would take for a cache miss.
                    trustedConfiguration.timeout = .seconds(10)
                    trustedConfiguration.tries = 1
                }
                var localConfiguration = CAresSource.Configuration(servers: [liar.address])
                localConfiguration.name = "local"
                let trusted = try CAresSource(configuration: trustedConfiguration)
                let local: CAresSource
                do {
                    local = try CAresSource(configuration: localConfiguration)
                } catch {
                    await trusted.shutdown()
                    throw error
                }
                try await withHostResolver(trusted: trusted, fallbacks: [local]) { resolver in
                    try await body(resolver, honest, liar)
                }
            }
        }
    }

    /// `GET /` with `Host: a.test` over `channel`; the whole response.
    static func get(_ channel: any Channel) async throws -> String {
        let wrapped = try await channel.eventLoop.submit {
            try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
        }.get()
        return try await wrapped.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"))
            var response = ByteBuffer()
            for try await var piece in inbound { response.writeBuffer(&piece) }
            return String(buffer: response)
        }
    }

    /// A loopback address for a socket of the test's own, besides `address`.
    static func otherLoopbackAddress(besides address: String) -> String {
        let last = Int(address.split(separator: ".").last ?? "") ?? 0
        return "127.0.0.\(last == 250 ? 249 : last + 1)"
    }

    /// The trusted source's answer is where the connection goes; TLS sends `a.test` and checks the certificate for
    /// it; nginx sees `a.test` as SNI and Host. The local resolver is never asked. One bootstrap connects twice, one
    /// connect after the other, each resolved (the second from the cache).
    @Test func theConnectionGoesToTheTrustedAnswerWithTheNameInSNIAndHost() async throws {
        try await Self.withOrigin { origin, tls in
            // TTL 300: without one dnsmasq answers TTL 0, the cache keeps it for its 5 s floor, and a machine busy with
            // the other suites can take longer than that between the two connects.
            try await Self.withResolver(records: ["host-record=a.test,\(origin.address),300"], lies: ["address=/a.test/127.0.0.77"], patient: true) {
                resolver, trusted, liar in
                for _ in 0..<2 {
                    let channel = try await connectTLS(to: "a.test", port: origin.port, resolver: resolver, tls: tls, group: Self.group)
                    #expect(channel.remoteAddress?.ipAddress == origin.address && channel.remoteAddress?.port == origin.port)
                    let response = try await Self.get(channel)
                    #expect(response.hasPrefix("HTTP/1.1 200 "), "\(response)")
                    #expect(response.hasSuffix("\r\n\r\nsni=a.test host=a.test\n"), "\(response)")
                }
                #expect(try trusted.queryCount("a.test", type: "A") == 1, "the second connect's lookup was a cache hit")
                #expect(try liar.queryCount("a.test", type: "A") == 0)

                // One bootstrap, reused: connects one after another get a lookup each.
                let bootstrap = ClientBootstrap(group: Self.group).resolving(with: resolver)
                for _ in 0..<2 {
                    let channel = try await bootstrap.connect(host: "a.test", port: origin.plainPort).get()
                    #expect(channel.remoteAddress?.ipAddress == origin.address)
                    try await channel.close()
                }
            }
        }
    }

    /// A certificate that holds only the address connected to, not the name: NIOSSL alone accepts it (the control
    /// below), and `CertificateNameHandler` refuses it before a byte of the request is written.
    @Test func aCertificateForTheAddressAloneIsRefused() async throws {
        let address = "127.0.0.\(Int.random(in: 2...254))"
        try await Self.withOrigin(address: address, subjectAltName: "IP:\(address)") { origin, tls in
            try await Self.withResolver(records: ["host-record=a.test,\(origin.address)"]) { resolver, _, _ in
                // NIOSSL alone: the handshake for a.test succeeds on the IP SAN.
                let plain = try await ClientBootstrap(group: Self.group)
                    .resolving(with: resolver)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: "a.test"))
                        }
                    }
                    .connect(host: "a.test", port: origin.port)
                    .get()
                let response = try await Self.get(plain)
                #expect(response.hasPrefix("HTTP/1.1 200 "), "the control: NIOSSL accepts the address's certificate: \(response)")

                // With the handler: refused. What it fires is recorded in the pipeline (the handshake may end before
                // the test could wrap the channel), and the connection is closed.
                let refused = RecordFirstError()
                let channel = try await ClientBootstrap(group: Self.group)
                    .resolving(with: resolver)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandlers([
                                NIOSSLClientHandler(context: tls, serverHostname: "a.test"),
                                CertificateNameHandler(host: "a.test"),
                                refused,
                            ])
                        }
                    }
                    .connect(host: "a.test", port: origin.port)
                    .get()
                try await channel.closeFuture.get()
                let refusal = refused.error as? CertificateNameError
                #expect(refusal?.code == .nameNotHeld, "\(String(describing: refused.error))")
                #expect(refusal?.reason.contains("only addresses") == true, "\(String(describing: refused.error))")
            }
        }
    }

    /// The trusted source is down, and the local resolver answers a.test with a loopback (private) address where a
    /// listener waits: the guard refuses the lie, the connect fails with the resolver's error, and nothing connects
    /// to the lie.
    @Test func aLyingLocalResolverIsRefusedAndNothingConnectsToTheLie() async throws {
        let lie = try LoopbackListener(address: "127.0.0.\(Int.random(in: 2...254))")
        try await TestCertificate.with(subjectAltName: "DNS:a.test") { certificate, _ in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificate))
            let tls = try NIOSSLContext(configuration: configuration)
            try await Self.withResolver(records: ["host-record=a.test,127.0.0.5"], lies: ["address=/a.test/\(lie.address)"]) { resolver, trusted, liar in
                trusted.stop()
                let error = await #expect(throws: NIOConnectionError.self) {
                    try await connectTLS(to: "a.test", port: lie.port, resolver: resolver, tls: tls, group: Self.group)
                }
                for dnsError in [error?.dnsAError, error?.dnsAAAAError] {
                    let refusal = dnsError as? ResolutionError
                    #expect(refusal?.code == .rejectedByGuard, "\(String(describing: dnsError))")
                    #expect(refusal?.verdict == HijackVerdict(level: .hijacked, reason: .privateAnswer))
                }
                #expect(error?.connectionErrors.isEmpty == true)
                let lies = try liar.queryCount("a.test", type: "A")
                #expect(lies >= 1, "the lie was told")
                #expect(lie.acceptedNothing, "nothing connected to the lie")
            }
        }
    }

    /// Both families: IPv4 goes nowhere (a listener whose queue is full drops the SYN), ::1 is nginx; NIO's Happy
    /// Eyeballs connects to ::1, and TLS and HTTP work there as over IPv4.
    @Test func happyEyeballsReachesIPv6WhenIPv4IsBlackHoled() async throws {
        try await Self.withOrigin(address: "[::1]") { origin, tls in
            let blackHole = try LoopbackListener(address: "127.0.0.\(Int.random(in: 2...254))", port: origin.port, blackHole: true)
            try await Self.withResolver(records: ["host-record=a.test,\(blackHole.address),::1"]) { resolver, _, _ in
                let channel = try await connectTLS(to: "a.test", port: origin.port, resolver: resolver, tls: tls, group: Self.group)
                #expect(channel.remoteAddress?.protocol == .inet6 && channel.remoteAddress?.ipAddress == "::1")
                #expect(channel.remoteAddress?.port == origin.port)
                let response = try await Self.get(channel)
                #expect(response.hasSuffix("\r\n\r\nsni=a.test host=a.test\n"), "\(response)")
            }
            withExtendedLifetime(blackHole) {}
        }
    }

    /// The other way round: ::1, which NIO tries first, swallows the SYN; NIO's Happy Eyeballs starts the IPv4
    /// attempt meanwhile and connects to nginx there.
    @Test func happyEyeballsReachesIPv4WhenIPv6IsBlackHoled() async throws {
        try await Self.withOrigin { origin, tls in
            let blackHole = try LoopbackListener(address: "::1", port: origin.port, blackHole: true)
            try await Self.withResolver(records: ["host-record=a.test,\(origin.address),::1"]) { resolver, _, _ in
                let channel = try await connectTLS(to: "a.test", port: origin.port, resolver: resolver, tls: tls, group: Self.group)
                #expect(channel.remoteAddress?.protocol == .inet && channel.remoteAddress?.ipAddress == origin.address)
                let response = try await Self.get(channel)
                #expect(response.hasSuffix("\r\n\r\nsni=a.test host=a.test\n"), "\(response)")
            }
            withExtendedLifetime(blackHole) {}
        }
    }

    /// An address is connected to as it is: the resolver's sources are not asked.
    @Test func anAddressIsConnectedToAsItIs() async throws {
        try await Self.withOrigin { origin, _ in
            try await Self.withResolver(records: []) { resolver, trusted, liar in
                let channel = try await ClientBootstrap(group: Self.group).resolving(with: resolver)
                    .connect(host: origin.address, port: origin.plainPort).get()
                #expect(channel.remoteAddress?.ipAddress == origin.address)
                try await channel.close()
                #expect(resolver.trusted.stats.misses == 0 && resolver.trusted.stats.hits == 0)
                #expect(try trusted.queryCount(origin.address, type: "A") == 0 && liar.queryCount(origin.address, type: "A") == 0)
            }
        }
    }

    /// An invalid host fails the connect with the name's error, and goes nowhere.
    @Test func anInvalidHostFailsTheConnectWithHostNameError() async throws {
        try await Self.withResolver(records: []) { resolver, _, _ in
            let error = await #expect(throws: NIOConnectionError.self) {
                try await ClientBootstrap(group: Self.group).resolving(with: resolver).connect(host: "bad_name.test", port: 443).get()
            }
            #expect((error?.dnsAError as? HostNameError)?.code == .invalidCharacter, "\(String(describing: error))")
            #expect(error?.connectionErrors.isEmpty == true)
        }
    }

    /// The DocC article's example is the one compiled here (ArticleExample.swift), word for word.
    @Test func theArticleExampleIsTheCompiledOne() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let article = try String(
            contentsOf: root.appendingPathComponent("Sources/HTTPDNSNIO/HTTPDNSNIO.docc/HTTPDNSNIO.md"),
            encoding: .utf8
        )
        let example = try String(contentsOf: root.appendingPathComponent("Tests/HTTPDNSNIOTests/ArticleExample.swift"), encoding: .utf8)
        let start = try #require(article.range(of: "```swift\n"))
        let end = try #require(article.range(of: "\n```\n", range: start.upperBound..<article.endIndex))
        #expect(article[start.upperBound..<end.lowerBound] + "\n" == example, "the article's first Swift block differs from ArticleExample.swift")
    }
}

/// Keeps the first error fired through the pipeline (read once the channel has closed).
final class RecordFirstError: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny
    private(set) var error: (any Error)?

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if self.error == nil { self.error = error }
        context.fireErrorCaught(error)
    }
}
