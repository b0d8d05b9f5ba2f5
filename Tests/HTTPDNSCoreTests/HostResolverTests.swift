import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// The resolution policy and the hijack guard, with sources whose answers the test sets.
@Suite struct HostResolverTests {
    let name = host("www.example")

    /// A resolver over a trusted source that fails, and fallbacks as given.
    func resolver(
        trusted: StaticSource = StaticSource(otherwise: .failure(.timeout), name: "httpdns"),
        fallbacks: [StaticSource],
        _ configure: (inout HostResolver.Configuration) -> Void = { _ in }
    ) throws -> HostResolver {
        var configuration = HostResolver.Configuration()
        configure(&configuration)
        return try HostResolver(trusted: trusted, fallbacks: fallbacks, configuration: configuration, clock: ManualMonotonicClock())
    }

    @Test func theTrustedSourcesAnswersAreFinal() async throws {
        let trusted = StaticSource(["www.example": .addresses(ipv4: ["192.0.2.1"], ipv6: [], ttl: 60)], name: "httpdns")
        let local = StaticSource(otherwise: .addresses(ipv4: ["198.51.100.9"], ipv6: [], ttl: 60), name: "cares")
        let resolver = try resolver(trusted: trusted, fallbacks: [local])
        let answer = try await resolver.resolve(name, families: .ipv4)
        #expect(answer.resolution.ipv4 == [v4("192.0.2.1")])
        #expect(answer.source == "httpdns" && !answer.fallback && answer.verdict == .ok)
        #expect(local.queryCount("www.example") == 0)
        // Its negative answers too: the local resolver is not asked to contradict them.
        await #expect(throws: ResolutionError.self) { try await resolver.resolve(host("missing.example"), families: .ipv4) }
        #expect(local.queryCount("missing.example") == 0)
    }

    @Test func whenTheTrustedSourceFailsTheFallbackAnswersMarked() async throws {
        let local = StaticSource(otherwise: .addresses(ipv4: ["198.51.100.9"], ipv6: [], ttl: 60), name: "cares")
        let answer = try await resolver(fallbacks: [local]).resolve(name, families: .ipv4)
        #expect(answer.resolution.ipv4 == [v4("198.51.100.9")])
        #expect(answer.source == "cares" && answer.fallback && answer.verdict == .ok)
    }

    /// A fallback's NXDOMAIN, the trusted source having failed: the answer stands (not cached against the trusted
    /// source, not passed on to the next fallback), and its message says what failed first, which is what to fix.
    @Test func aFallbacksNegativeAnswerSaysWhyTheFallbackWasAsked() async throws {
        let local = StaticSource(otherwise: .negative(.nameNotFound), name: "cares")
        let system = StaticSource(otherwise: .addresses(ipv4: ["198.51.100.9"], ipv6: [], ttl: 60), name: "system")
        let resolver = try resolver(fallbacks: [local, system])
        let error = await #expect(throws: ResolutionError.self) { try await resolver.resolve(name, families: .ipv4) }
        #expect(error?.code == .nameNotFound)
        #expect(error?.ttlSeconds != nil, "a negative answer keeps its TTL")
        let message = error?.message ?? ""
        #expect(message.hasPrefix("www.example does not exist"), "\(message)")
        #expect(message.contains("; cares was asked because the sources before it failed: httpdns: "), "\(message)")
        #expect(system.queryCount("www.example") == 0)
        #expect(resolver.trusted.stats.entries == 0, "the trusted cache holds nothing it did not answer")
        #expect(resolver.fallbacks[0].stats.entries == 1, "the fallback's cache holds its NXDOMAIN")
    }

    /// H3: a private address for a public name is refused, never cached, and the next fallback is asked.
    @Test func aPrivateAnswerIsRefusedNotCachedAndTheNextFallbackAsked() async throws {
        let lying = StaticSource(otherwise: .addresses(ipv4: ["10.1.2.3"], ipv6: [], ttl: 600), name: "cares")
        let system = StaticSource(otherwise: .addresses(ipv4: ["198.51.100.9"], ipv6: [], ttl: 60), name: "system")
        let resolver = try resolver(fallbacks: [lying, system])
        let answer = try await resolver.resolve(name, families: .ipv4)
        #expect(answer.source == "system" && answer.resolution.ipv4 == [v4("198.51.100.9")])
        _ = try await resolver.resolve(name, families: .ipv4)
        #expect(lying.queryCount("www.example") == 2, "the refused answer was not cached: asked again")
        #expect(system.queryCount("www.example") == 1, "the accepted one was")
        // With only the lying fallback, the lookup fails saying why.
        let lyingAlone = StaticSource(otherwise: .addresses(ipv4: ["10.1.2.3"], ipv6: [], ttl: 600), name: "cares")
        let alone = try self.resolver(fallbacks: [lyingAlone])
        let error = await #expect(throws: ResolutionError.self) { try await alone.resolve(name, families: .ipv4) }
        #expect(error?.code == .rejectedByGuard)
        #expect(error?.message.contains("private-answer") == true, "\(error?.message ?? "")")
        _ = await #expect(throws: ResolutionError.self) { try await alone.resolve(name, families: .ipv4) }
        #expect(lyingAlone.queryCount("www.example") == 2, "asked again each time: a refused answer is never cached")
    }

    /// A network change empties every cache, tells every source, and resolves the names in use again through the
    /// policy, each for the families it was held for; what cannot be resolved now is reported.
    @Test func aNetworkChangeEmptiesTheCachesAndResolvesTheNamesInUseAgain() async throws {
        let trusted = StaticSource(
            [
                "four.example": .addresses(ipv4: ["192.0.2.4"], ipv6: [], ttl: 600),
                "both.example": .addresses(ipv4: ["192.0.2.5"], ipv6: ["2001:db8::5"], ttl: 600),
                "gone.example": .addresses(ipv4: ["192.0.2.6"], ipv6: [], ttl: 600),
            ],
            otherwise: .failure(.timeout),
            name: "httpdns"
        )
        let local = StaticSource(["local.example": .addresses(ipv4: ["198.51.100.7"], ipv6: [], ttl: 600)], name: "cares")
        let resolver = try resolver(trusted: trusted, fallbacks: [local])
        _ = try await resolver.resolve(host("four.example"), families: .ipv4)
        _ = try await resolver.resolve(host("both.example"), families: .all)
        _ = try await resolver.resolve(host("gone.example"), families: .ipv4)
        #expect(try await resolver.resolve(host("local.example"), families: .ipv4).fallback)

        // On the new network the trusted service answers differently, and reaches local.example too.
        trusted.set("both.example", .addresses(ipv4: ["192.0.2.55"], ipv6: ["2001:db8::55"], ttl: 600))
        trusted.set("local.example", .addresses(ipv4: ["192.0.2.7"], ipv6: [], ttl: 600))
        trusted.set("gone.example", .failure(.serverUnreachable))
        local.set("gone.example", .failure(.refused))
        let failures = try await resolver.networkChanged()

        #expect(failures.keys.map(\.value) == ["gone.example"])
        #expect(failures[host("gone.example")]?.code == .refused, "the last source's failure")
        #expect(trusted.networkChangeCount == 1 && local.networkChangeCount == 1)
        #expect(trusted.queryCount("four.example") == 2 && trusted.queryCount("both.example") == 2)
        let both = try #require(try resolver.trusted.cachedResolution(host("both.example"), families: .all))
        #expect(both.ipv4 == [v4("192.0.2.55")] && both.ipv6 == [v6("2001:db8::55")])
        #expect(try resolver.trusted.cachedResolution(host("four.example"), families: .ipv4)?.ipv4 == [v4("192.0.2.4")])
        #expect(try resolver.trusted.cachedResolution(host("four.example"), families: .ipv6) == nil, "asked again for IPv4 only")
        #expect(try resolver.trusted.cachedResolution(host("local.example"), families: .ipv4)?.ipv4 == [v4("192.0.2.7")])
        #expect(resolver.fallbacks[0].stats.entries == 0, "the local answer learnt on the old network is gone")
        // Lookups now are cache hits.
        let answer = try await resolver.resolve(host("local.example"), families: .ipv4)
        #expect(!answer.fallback && answer.resolution.ipv4 == [v4("192.0.2.7")])
        #expect(trusted.queryCount("local.example") == 2, "one miss before the change, one re-resolution after; then a hit")
        await #expect(throws: ConfigurationError.self) { try await resolver.networkChanged(concurrency: 0) }
    }

    @Test func theAllowListLetsInternalNamesResolvePrivately() async throws {
        let local = StaticSource(otherwise: .addresses(ipv4: ["10.1.2.3"], ipv6: [], ttl: 60), name: "cares")
        let resolver = try resolver(fallbacks: [local]) { $0.guardConfiguration.privateAnswerAllowList = try! HostPatterns([".corp.example"]) }
        #expect(try await resolver.resolve(host("db.corp.example"), families: .ipv4).resolution.ipv4 == [v4("10.1.2.3")])
        await #expect(throws: ResolutionError.self) { try await resolver.resolve(host("corp.example"), families: .ipv4) }
    }

    /// H7: a strict host never uses the local resolver.
    @Test func aStrictHostNeverFallsBack() async throws {
        let local = StaticSource(otherwise: .addresses(ipv4: ["198.51.100.9"], ipv6: [], ttl: 60), name: "cares")
        let resolver = try resolver(fallbacks: [local]) { $0.strictHosts = try! HostPatterns(["www.example"]) }
        let error = await #expect(throws: ResolutionError.self) { try await resolver.resolve(name, families: .ipv4) }
        #expect(error?.code == .timeout)
        #expect(error?.message.contains("may only be resolved by httpdns") == true)
        #expect(local.queryCount("www.example") == 0)
    }

    @Test func theGuardsRules() throws {
        let guardian = HijackGuard()
        let public1 = IPAddress("192.0.2.1")!
        let public2 = IPAddress("198.51.100.9")!
        #expect(guardian.judge([public1], host: name, trusted: nil) == .ok)
        #expect(guardian.judge([IPAddress("fd00::1")!], host: name, trusted: nil).reason == .privateAnswer)
        #expect(guardian.judge([IPAddress("127.0.0.1")!], host: name, trusted: nil).level == .hijacked)
        #expect(guardian.judge([public1], host: name, trusted: .nameNotFound) == HijackVerdict(level: .hijacked, reason: .nxdomainRewrite, trustedAddresses: []))
        let swap = guardian.judge([public2], host: name, trusted: .addresses([public1]))
        #expect(swap.level == .suspect && swap.reason == .addressSwap && swap.trustedAddresses == [public1])
        #expect(guardian.judge([public1, public2], host: name, trusted: .addresses([public1])) == .ok, "an overlap is no swap (CDNs)")
        #expect(guardian.judge([], host: name, trusted: .nameNotFound) == .ok)
        // A test stage that stands 127.0.0.0/8 in for public addresses leaves it out of the private ranges.
        var stage = HijackGuard.Configuration()
        stage.privateRanges = IPRange.privateAndReserved.filter { $0.description != "127.0.0.0/8" }
        #expect(HijackGuard(configuration: stage).judge([IPAddress("127.0.0.1")!], host: name, trusted: nil) == .ok)
    }

    @Test func rangesAndPatterns() throws {
        #expect(IPRange.privateAndReserved.count == 11)
        let block = try IPRange(parsing: "172.16.0.0/12")
        #expect(block.contains(IPAddress("172.31.255.255")!) && !block.contains(IPAddress("172.32.0.0")!))
        #expect(try IPRange(parsing: "fe80::/10").contains(IPAddress("febf::1")!))
        #expect(!(try IPRange(parsing: "fe80::/10").contains(IPAddress("fec0::1")!)))
        #expect(try IPRange(parsing: "0.0.0.0/0").contains(IPAddress("203.0.113.1")!))
        #expect(!(try IPRange(parsing: "::/0").contains(IPAddress("203.0.113.1")!)), "families do not mix")
        for bad in ["10.0.0.0/33", "10/8", "::/129", "x"] { #expect(throws: ConfigurationError.self) { try IPRange(parsing: bad) } }
        let patterns = try HostPatterns(["api.example", ".corp.example"])
        #expect(patterns.matches(host("api.example")) && patterns.matches(host("a.b.corp.example")))
        #expect(!patterns.matches(host("corp.example")) && !patterns.matches(host("xapi.example")))
        #expect(throws: ConfigurationError.self) { try HostPatterns(["bad_name"]) }
    }
}
