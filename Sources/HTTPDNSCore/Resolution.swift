/// The addresses of a name, with how long they may be used and where they came from.
public struct Resolution: Sendable, Hashable {
    /// The name that was resolved.
    public var host: HostName
    /// IPv4 addresses (A records), in the order the source gave them.
    public var ipv4: [IPv4Address]
    /// IPv6 addresses (AAAA records), in the order the source gave them.
    public var ipv6: [IPv6Address]
    /// Seconds the answer may still be used: the TTL left in the cache, or the stale answer TTL for a stale answer.
    public var ttlSeconds: UInt32
    /// The TTL the upstream gave (after the cache's clamps).
    public var originTTLSeconds: UInt32
    /// The name of the source that answered (`cares`, `system`, …).
    public var source: String
    /// Whether the answer came from the cache rather than a query made for this call.
    public var cached: Bool
    /// Whether the answer is expired and served because refreshing it failed (RFC 8767).
    public var stale: Bool

    public init(
        host: HostName,
        ipv4: [IPv4Address],
        ipv6: [IPv6Address],
        ttlSeconds: UInt32,
        originTTLSeconds: UInt32,
        source: String,
        cached: Bool,
        stale: Bool
    ) {
        self.host = host
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttlSeconds = ttlSeconds
        self.originTTLSeconds = originTTLSeconds
        self.source = source
        self.cached = cached
        self.stale = stale
    }

    /// All addresses, IPv4 first.
    public var addresses: [IPAddress] { ipv4.map(IPAddress.v4) + ipv6.map(IPAddress.v6) }
}
