/// The addresses of a name, with how long they may be used and where they came from.
///
/// The addresses live in one shared, immutable object, so handing a resolution out of the cache costs one
/// reference count, not one per array and string. Setting a property replaces that object for this value only.
public struct Resolution: Sendable, Hashable {
    /// What stays the same for every caller of one cached answer.
    final class Answer: Sendable {
        let host: HostName
        let ipv4: [IPv4Address]
        let ipv6: [IPv6Address]
        let originTTLSeconds: UInt32
        let source: String

        init(host: HostName, ipv4: [IPv4Address], ipv6: [IPv6Address], originTTLSeconds: UInt32, source: String) {
            self.host = host
            self.ipv4 = ipv4
            self.ipv6 = ipv6
            self.originTTLSeconds = originTTLSeconds
            self.source = source
        }

        func with(
            host: HostName? = nil,
            ipv4: [IPv4Address]? = nil,
            ipv6: [IPv6Address]? = nil,
            originTTLSeconds: UInt32? = nil,
            source: String? = nil
        ) -> Answer {
            Answer(
                host: host ?? self.host,
                ipv4: ipv4 ?? self.ipv4,
                ipv6: ipv6 ?? self.ipv6,
                originTTLSeconds: originTTLSeconds ?? self.originTTLSeconds,
                source: source ?? self.source
            )
        }
    }

    private(set) var answer: Answer

    /// Seconds the answer may still be used: the TTL left in the cache, or the stale answer TTL for a stale answer.
    public var ttlSeconds: UInt32
    /// Whether the answer came from the cache rather than a query made for this call.
    public var cached: Bool
    /// Whether the answer is expired and served because refreshing it failed (RFC 8767).
    public var stale: Bool
    /// For a stale negative answer (returned, not thrown, so it can be served stale): which one it was. Nil for
    /// every answer with addresses.
    public var negativeAnswer: NegativeAnswer?

    init(answer: Answer, ttlSeconds: UInt32, cached: Bool, stale: Bool) {
        self.answer = answer
        self.ttlSeconds = ttlSeconds
        self.cached = cached
        self.stale = stale
    }

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
        self.init(
            answer: Answer(host: host, ipv4: ipv4, ipv6: ipv6, originTTLSeconds: originTTLSeconds, source: source),
            ttlSeconds: ttlSeconds,
            cached: cached,
            stale: stale
        )
    }

    /// The name that was resolved.
    public var host: HostName {
        get { answer.host }
        set { answer = answer.with(host: newValue) }
    }

    /// IPv4 addresses (A records), in the order the source gave them.
    public var ipv4: [IPv4Address] {
        get { answer.ipv4 }
        set { answer = answer.with(ipv4: newValue) }
    }

    /// IPv6 addresses (AAAA records), in the order the source gave them.
    public var ipv6: [IPv6Address] {
        get { answer.ipv6 }
        set { answer = answer.with(ipv6: newValue) }
    }

    /// The TTL as the upstream gave it, before the cache's clamps (for a negative answer without one, the
    /// cache's default negative TTL).
    public var originTTLSeconds: UInt32 {
        get { answer.originTTLSeconds }
        set { answer = answer.with(originTTLSeconds: newValue) }
    }

    /// The name of the source that answered (`cares`, `system`, …).
    public var source: String {
        get { answer.source }
        set { answer = answer.with(source: newValue) }
    }

    /// All addresses, IPv4 first.
    public var addresses: [IPAddress] { ipv4.map(IPAddress.v4) + ipv6.map(IPAddress.v6) }

    public static func == (lhs: Resolution, rhs: Resolution) -> Bool {
        lhs.ttlSeconds == rhs.ttlSeconds && lhs.cached == rhs.cached && lhs.stale == rhs.stale
            && lhs.negativeAnswer == rhs.negativeAnswer
            && (lhs.answer === rhs.answer
                || (lhs.host == rhs.host && lhs.ipv4 == rhs.ipv4 && lhs.ipv6 == rhs.ipv6
                    && lhs.originTTLSeconds == rhs.originTTLSeconds && lhs.source == rhs.source))
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(host)
        hasher.combine(ipv4)
        hasher.combine(ipv6)
        hasher.combine(ttlSeconds)
        hasher.combine(originTTLSeconds)
        hasher.combine(source)
        hasher.combine(cached)
        hasher.combine(stale)
        hasher.combine(negativeAnswer)
    }
}
