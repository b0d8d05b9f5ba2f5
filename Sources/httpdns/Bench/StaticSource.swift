import HTTPDNSCore

/// A source that answers every name at once from memory, so a benchmark measures the cache and nothing else.
struct StaticSource: ResolutionSource {
    var name: String { "static" }

    func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        let seed = UInt32(truncatingIfNeeded: host.value.hashValue)
        return SourceAnswer(
            ipv4: families.contains(.ipv4) ? .addresses([IPv4Address(0xC000_0200 | (seed & 0xFF))], ttlSeconds: 3600) : nil,
            ipv6: families.contains(.ipv6) ? .addresses([IPv6Address(high: 0x2001_0DB8_0000_0000, low: UInt64(seed))], ttlSeconds: 3600) : nil
        )
    }
}
