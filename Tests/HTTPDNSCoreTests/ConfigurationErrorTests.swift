import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// A library given settings it cannot work with throws, naming the setting; it never stops the process.
@Suite struct ConfigurationErrorTests {
    @Test(arguments: [
        ("maxEntries", { @Sendable (c: inout ResolverCache.Configuration) in c.maxEntries = 0 }),
        ("maxPendingQueries", { @Sendable (c: inout ResolverCache.Configuration) in c.maxPendingQueries = -1 }),
        ("minTTL", { @Sendable (c: inout ResolverCache.Configuration) in c.minTTL = .seconds(10); c.maxTTL = .seconds(5) }),
        ("minNegativeTTL", { @Sendable (c: inout ResolverCache.Configuration) in c.minNegativeTTL = .seconds(10); c.maxNegativeTTL = .seconds(5) }),
        ("staleAnswerClientTimeout", { @Sendable (c: inout ResolverCache.Configuration) in c.staleAnswerClientTimeout = .milliseconds(-1) }),
        // A TTL clamp is a DNS TTL: whole seconds within UInt32.
        ("minTTL", { @Sendable (c: inout ResolverCache.Configuration) in c.minTTL = .milliseconds(1500) }),
        ("maxTTL", { @Sendable (c: inout ResolverCache.Configuration) in c.maxTTL = .seconds(-1) }),
        ("negativeTTL", { @Sendable (c: inout ResolverCache.Configuration) in c.negativeTTL = .seconds(Int64(UInt32.max) + 1) }),
        ("staleAnswerTTL", { @Sendable (c: inout ResolverCache.Configuration) in c.staleAnswerTTL = .nanoseconds(1) }),
        ("maxStale", { @Sendable (c: inout ResolverCache.Configuration) in c.maxStale = .seconds(-1) }),
        ("staleRefreshRetry", { @Sendable (c: inout ResolverCache.Configuration) in c.staleRefreshRetry = .milliseconds(-1) }),
        ("refreshAheadFraction", { @Sendable (c: inout ResolverCache.Configuration) in c.refreshAheadFraction = 1.5 }),
        ("refreshAheadFraction", { @Sendable (c: inout ResolverCache.Configuration) in c.refreshAheadFraction = .nan }),
    ] as [(String, @Sendable (inout ResolverCache.Configuration) -> Void)])
    func aCacheWithAnUnworkableSettingIsNotMade(key: String, change: @Sendable (inout ResolverCache.Configuration) -> Void) {
        var configuration = ResolverCache.Configuration()
        change(&configuration)
        let error = #expect(throws: ConfigurationError.self) { try ResolverCache(source: StaticSource(), configuration: configuration) }
        #expect(error?.key == key)
        #expect(error?.description.hasPrefix(key) == true)
    }

    @Test func theDefaultsValidate() throws {
        try ResolverCache.Configuration().validate()
    }

    @Test func preResolveRefusesANonPositiveConcurrency() async throws {
        let cache = try ResolverCache(source: StaticSource())
        await #expect(throws: ConfigurationError(.outOfRange, key: "concurrency", reason: "must be a positive number of lookups at once, not 0")) {
            try await cache.preResolve([try HostName("a.example")], concurrency: 0)
        }
    }

    @Test func aLookupOfNoFamilyFailsWithItsOwnCode() async throws {
        let cache = try ResolverCache(source: StaticSource())
        let name = try HostName("a.example")
        let error = await #expect(throws: ResolutionError.self) { try await cache.resolve(name, families: []) }
        #expect(error?.code == .noFamilies)
        #expect(throws: ResolutionError.self) { try cache.cachedResolution(name, families: []) }
        let system = await #expect(throws: ResolutionError.self) { try await SystemSource().query(name, families: []) }
        #expect(system?.code == .noFamilies)
    }
}
