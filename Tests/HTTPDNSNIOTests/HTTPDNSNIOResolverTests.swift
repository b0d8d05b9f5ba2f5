import HTTPDNSCore
import HTTPDNSNIO
import HTTPDNSTesting
import NIOCore
import NIOPosix
import Testing

/// The resolver as NIO drives it (AAAA then A, on an event loop), over a `HostResolver` whose trusted source is a
/// scripted or static one in process: which queries reach the source, what each future gets, cancellation and bad
/// input. Connecting through it to real servers: `ConnectThroughResolverTests`.
@Suite("HTTPDNSNIOResolver", .timeLimit(.minutes(1)))
struct HTTPDNSNIOResolverTests {
    static let loop = MultiThreadedEventLoopGroup.singleton.next()

    /// The two queries NIO makes for one connect, AAAA first, made on the event loop as NIO makes them.
    static func queries(_ resolver: HTTPDNSNIOResolver, _ host: String, port: Int = 443) async throws -> (
        aaaa: EventLoopFuture<[SocketAddress]>, a: EventLoopFuture<[SocketAddress]>
    ) {
        try await loop.submit {
            (resolver.initiateAAAAQuery(host: host, port: port), resolver.initiateAQuery(host: host, port: port))
        }.get()
    }

    /// The addresses of both queries, as text (`127.0.0.1:443`), AAAA's first.
    static func answers(_ resolver: HTTPDNSNIOResolver, _ host: String, port: Int = 443) async throws -> (aaaa: [String], a: [String]) {
        let (aaaa, a) = try await queries(resolver, host, port: port)
        return (try await aaaa.get().map(Self.text), try await a.get().map(Self.text))
    }

    static func text(_ address: SocketAddress) -> String {
        switch address {
        case .v6: "[\(address.ipAddress ?? "?")]:\(address.port ?? -1)"
        default: "\(address.ipAddress ?? "?"):\(address.port ?? -1)"
        }
    }

    static func hostResolver(_ trusted: any ResolutionSource, fallbacks: [any ResolutionSource] = []) throws -> HostResolver {
        try HostResolver(trusted: trusted, fallbacks: fallbacks)
    }

    @Test func oneLookupAnswersBothFamilies() async throws {
        let trusted = StaticSource(["a.test": .addresses(ipv4: ["192.0.2.1", "192.0.2.2"], ipv6: ["2001:db8::1"], ttl: 300)])
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver)
        let (aaaa, a) = try await Self.answers(nio, "a.test", port: 8443)
        #expect(aaaa == ["[2001:db8::1]:8443"])
        #expect(a == ["192.0.2.1:8443", "192.0.2.2:8443"])
        #expect(trusted.queryCount("a.test") == 1, "one lookup for both families")
        #expect(resolver.trusted.stats.misses == 1 && resolver.trusted.stats.hits == 0)
        await resolver.shutdown()
    }

    /// A family the answer lacks is an empty list, not a failure: NIO connects with the other.
    @Test func aFamilyTheAnswerLacksIsAnEmptyList() async throws {
        let trusted = StaticSource([
            "v4.test": .addresses(ipv4: ["192.0.2.1"], ipv6: [], ttl: 300),
            "v6.test": .addresses(ipv4: [], ipv6: ["2001:db8::6"], ttl: 300),
        ])
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver)
        #expect(try await Self.answers(nio, "v4.test") == (aaaa: [], a: ["192.0.2.1:443"]))
        #expect(try await Self.answers(nio, "v6.test") == (aaaa: ["[2001:db8::6]:443"], a: []))
        await resolver.shutdown()
    }

    /// Connects made one after another with one resolver (a bootstrap reused) get a lookup each: the second is the
    /// cache's hit, not the first connect's answer kept.
    @Test func connectsOneAfterAnotherGetALookupEach() async throws {
        let trusted = StaticSource([
            "a.test": .addresses(ipv4: ["192.0.2.1"], ipv6: [], ttl: 300),
            "b.test": .addresses(ipv4: ["192.0.2.2"], ipv6: [], ttl: 300),
        ])
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver)
        #expect(try await Self.answers(nio, "a.test").a == ["192.0.2.1:443"])
        #expect(try await Self.answers(nio, "a.test").a == ["192.0.2.1:443"])
        #expect(try await Self.answers(nio, "b.test").a == ["192.0.2.2:443"])
        #expect(trusted.queryCount("a.test") == 1 && trusted.queryCount("b.test") == 1)
        #expect(resolver.trusted.stats.hits == 1, "the second connect's lookup was the cache's hit")
        await resolver.shutdown()
    }

    /// A lookup that fails fails both queries with the resolver's own error, which NIO reports as the DNS error.
    @Test func aFailedLookupFailsBothQueriesWithTheResolutionError() async throws {
        let trusted = StaticSource(["down.test": .failure(.serverUnreachable)], otherwise: .negative(.nameNotFound))
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver)
        for (host, code) in [("missing.test", ResolutionError.Code.nameNotFound), ("down.test", .serverUnreachable)] {
            let (aaaa, a) = try await Self.queries(nio, host)
            for future in [aaaa, a] {
                let error = await #expect(throws: ResolutionError.self) { try await future.get() }
                #expect(error?.code == code, "\(host): \(String(describing: error))")
            }
        }
        await resolver.shutdown()
        let error = await #expect(throws: ResolutionError.self) { try await Self.queries(nio, "other.test").a.get() }
        #expect(error?.code == .shutdown)
    }

    /// `families` leaves a family out: its query is answered empty at once, and the source is asked for the other
    /// alone.
    @Test func familiesLeaveAFamilyOut() async throws {
        let trusted = ScriptedSource()
        trusted.script("a.test", ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: 300)
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver, families: .ipv4)
        #expect(try await Self.answers(nio, "a.test") == (aaaa: [], a: ["192.0.2.1:443"]))
        #expect(trusted.queryCount("a.test", families: .ipv4) == 1 && trusted.totalQueryCount == 1)
        let none = HTTPDNSNIOResolver(resolver: resolver, families: [])
        let error = await #expect(throws: ResolutionError.self) { try await Self.queries(none, "a.test").a.get() }
        #expect(error?.code == .noFamilies)
        await resolver.shutdown()
    }

    /// NIO calls `cancelQueries()` when it no longer needs the answers: the waiting futures fail at once, while the
    /// source is still held, and the next connect gets a lookup of its own.
    @Test func cancelQueriesFailsTheWaitingQueriesAtOnce() async throws {
        let trusted = ScriptedSource()
        trusted.script("slow.test", ipv4: ["192.0.2.9"], ttl: 300)
        trusted.hold("slow.test")
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver)
        let (aaaa, a) = try await Self.queries(nio, "slow.test")
        try await trusted.waitForQueries("slow.test")
        try await Self.loop.submit { nio.cancelQueries() }.get()
        for future in [aaaa, a] {
            let error = await #expect(throws: HTTPDNSNIOResolverError.self) { try await future.get() }
            #expect(error?.code == .cancelled && error?.host == "slow.test")
        }
        #expect(trusted.queryCount("slow.test") == 1, "the source is still held")
        trusted.release("slow.test")
        #expect(try await Self.answers(nio, "slow.test").a == ["192.0.2.9:443"])
        await resolver.shutdown()
    }

    /// An address is answered as itself, in its own family, and nothing is asked.
    @Test func anAddressLiteralIsAnsweredAsItselfWithoutALookup() async throws {
        let trusted = ScriptedSource()
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver, families: .ipv4)
        #expect(try await Self.answers(nio, "127.0.0.1", port: 80) == (aaaa: [], a: ["127.0.0.1:80"]))
        #expect(try await Self.answers(nio, "::1", port: 80) == (aaaa: ["[::1]:80"], a: []), "an address is no lookup: families do not apply")
        #expect(try await Self.answers(nio, "2001:db8::7") == (aaaa: ["[2001:db8::7]:443"], a: []))
        #expect(trusted.totalQueryCount == 0)
        #expect(resolver.trusted.stats.misses == 0 && resolver.trusted.stats.hits == 0)
        await resolver.shutdown()
    }

    /// A host that is neither an address nor a valid name fails with the name's error, and nothing is asked; a
    /// port no address can have fails too. Nothing stops the process.
    @Test(arguments: [
        ("", HostNameError.Code.empty),
        ("bad_name.test", .invalidCharacter),
        ("a..test", .emptyLabel),
        ("-a.test", .invalidHyphen),
        ("[::1]", .invalidCharacter),
        ("127.1", .ipAddress),
        ("999.0.0.1", .ipAddress),
        ("127.0.0.1\u{0}.evil.test", .invalidCharacter),
        ("fe80::1%lo", .invalidCharacter),
        ("ünicode.test", .invalidCharacter),
        (String(repeating: "a.", count: 200) + "test", .tooLong),
    ])
    func anInvalidHostFailsWithHostNameError(host: String, code: HostNameError.Code) async throws {
        let trusted = ScriptedSource()
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver)
        let (aaaa, a) = try await Self.queries(nio, host)
        for future in [aaaa, a] {
            let error = await #expect(throws: HostNameError.self) { try await future.get() }
            #expect(error?.code == code, "\(String(describing: error))")
        }
        #expect(trusted.totalQueryCount == 0)
        await resolver.shutdown()
    }

    @Test(arguments: [-1, 65_536, Int.max, Int.min])
    func aPortNoAddressCanHaveFails(port: Int) async throws {
        let trusted = ScriptedSource()
        let resolver = try Self.hostResolver(trusted)
        let nio = HTTPDNSNIOResolver(resolver: resolver)
        for host in ["a.test", "127.0.0.1"] {
            let error = await #expect(throws: HTTPDNSNIOResolverError.self) { try await Self.queries(nio, host, port: port).a.get() }
            #expect(error?.code == .invalidPort)
        }
        #expect(trusted.totalQueryCount == 0)
        await resolver.shutdown()
    }

    /// Queries made off any event loop are completed on the loop given, and the resolver may be let go while its
    /// lookup is in flight: the lookup still answers the futures.
    @Test func droppingTheResolverMidLookupStillAnswers() async throws {
        let trusted = ScriptedSource()
        trusted.script("held.test", ipv4: ["192.0.2.3"], ipv6: ["2001:db8::3"], ttl: 300)
        trusted.hold("held.test")
        let resolver = try Self.hostResolver(trusted)
        var nio: HTTPDNSNIOResolver? = HTTPDNSNIOResolver(resolver: resolver, eventLoop: Self.loop)
        let aaaa = nio!.initiateAAAAQuery(host: "held.test", port: 1)
        let a = nio!.initiateAQuery(host: "held.test", port: 2)
        #expect(aaaa.eventLoop === Self.loop && a.eventLoop === Self.loop)
        nio = nil
        try await trusted.waitForQueries("held.test")
        trusted.release("held.test")
        #expect(try await aaaa.get().map(Self.text) == ["[2001:db8::3]:1"])
        #expect(try await a.get().map(Self.text) == ["192.0.2.3:2"])
        #expect(trusted.queryCount("held.test") == 1)
        await resolver.shutdown()
    }

    @Test func theErrorsCodesAreStable() {
        #expect(HTTPDNSNIOResolverError.Code.all.map(\.description) == ["invalid_port", "cancelled"])
        let error = HTTPDNSNIOResolverError(.cancelled, host: "a.test", reason: "why")
        #expect(error.description == "no addresses for 'a.test': why")
        #expect(error == HTTPDNSNIOResolverError(.cancelled, host: "a.test", reason: "why", cause: ResolutionError(.timeout, "x")))
    }
}
