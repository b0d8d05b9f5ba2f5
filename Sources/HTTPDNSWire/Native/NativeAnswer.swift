import HTTPDNSCore

/// The answer of `GET /d` (docs/WIRE-FORMATS.md §1):
/// `{"host":…,"ips":[…],"ipsv6":[…],"ttl":…,"origin_ttl":…[,"stale":true]}`.
///
/// `ips` is present when IPv4 was asked, `ipsv6` when IPv6 was; a negative answer has empty lists.
public struct NativeAnswer: Sendable, Hashable {
    /// The name, normalised (lower case, no trailing dot).
    public var host: String
    /// The IPv4 addresses, or nil when IPv4 was not asked.
    public var ipv4: [IPv4Address]?
    /// The IPv6 addresses, or nil when IPv6 was not asked.
    public var ipv6: [IPv6Address]?
    /// Seconds the answer has left in the service's cache.
    public var ttlSeconds: UInt32
    /// The TTL the upstream gave.
    public var originTTLSeconds: UInt32
    /// Served stale (RFC 8767) because the upstream is failing.
    public var stale: Bool

    public init(
        host: String,
        ipv4: [IPv4Address]?,
        ipv6: [IPv6Address]?,
        ttlSeconds: UInt32,
        originTTLSeconds: UInt32,
        stale: Bool = false
    ) {
        self.host = host
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttlSeconds = ttlSeconds
        self.originTTLSeconds = originTTLSeconds
        self.stale = stale
    }

    /// Writes the answer as compact JSON. Nothing in it needs escaping (host names are letters, digits, hyphens
    /// and dots; addresses and numbers are digits, dots, colons and hex), so it is written piece by piece: this
    /// is every `/d` cache hit's work on the service.
    @inlinable
    public func writeJSON(into output: inout some JSONOutput) {
        output.appendJSON(#"{"host":""#)
        output.appendJSON(text: host)
        output.appendJSON("\"")
        if let ipv4 {
            output.appendJSON(#","ips":["#)
            for (index, address) in ipv4.enumerated() {
                output.appendJSON(index == 0 ? "\"" : ",\"")
                output.appendJSON(ipv4: address)
                output.appendJSON("\"")
            }
            output.appendJSON("]")
        }
        if let ipv6 {
            output.appendJSON(#","ipsv6":["#)
            for (index, address) in ipv6.enumerated() {
                output.appendJSON(index == 0 ? "\"" : ",\"")
                output.appendJSON(text: address.description)
                output.appendJSON("\"")
            }
            output.appendJSON("]")
        }
        output.appendJSON(#","ttl":"#)
        output.appendJSON(decimal: Int(ttlSeconds))
        output.appendJSON(#","origin_ttl":"#)
        output.appendJSON(decimal: Int(originTTLSeconds))
        if stale { output.appendJSON(#","stale":true"#) }
        output.appendJSON("}")
    }

    /// About how many bytes ``writeJSON(into:)`` writes, for reserving them.
    public var estimatedJSONSize: Int {
        64 + host.utf8.count + 18 * (ipv4?.count ?? 0) + 42 * (ipv6?.count ?? 0)
    }

    /// Reads an answer, checking every member: the addresses parse, the TTLs are whole seconds in range.
    /// Members the format does not name are ignored, as the wire format allows services to add them.
    /// - Throws: ``NativeFormatError`` saying what is wrong.
    public init(parsingJSON bytes: some Collection<UInt8>) throws(NativeFormatError) {
        let what = "the /d answer"
        let object = try JSONValue.parseObject(bytes, what: what)
        self.init(
            host: try object.string("host", in: what),
            ipv4: try object.addresses("ips", in: what, IPv4Address.init),
            ipv6: try object.addresses("ipsv6", in: what, IPv6Address.init),
            ttlSeconds: try object.seconds("ttl", in: what),
            originTTLSeconds: try object.seconds("origin_ttl", in: what),
            stale: try object.optionalBool("stale", in: what) ?? false
        )
    }
}

/// Where ``NativeAnswer/writeJSON(into:)`` writes: a byte buffer of the caller's (the service's `ByteBuffer`) or
/// `[UInt8]`.
public protocol JSONOutput {
    /// Appends text that is already JSON.
    mutating func appendJSON(_ text: StaticString)
    /// Appends text that needs no escaping.
    mutating func appendJSON(text: String)
    /// Appends a non-negative whole number in decimal.
    mutating func appendJSON(decimal value: Int)
    /// Appends an IPv4 address in dotted-quad notation.
    mutating func appendJSON(ipv4 address: IPv4Address)
}

extension [UInt8]: JSONOutput {
    public mutating func appendJSON(_ text: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func appendJSON(text: String) { append(contentsOf: text.utf8) }

    public mutating func appendJSON(decimal value: Int) { append(contentsOf: String(value).utf8) }

    public mutating func appendJSON(ipv4 address: IPv4Address) { append(contentsOf: address.description.utf8) }
}
