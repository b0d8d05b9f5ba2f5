import HTTPDNSCore

/// The answer of `GET /resolve` (docs/WIRE-FORMATS.md §1): `{"dns":[{"host":…,"ips":[…],"type":1,"ttl":…}, …]}`, one
/// record per host and family asked, each with its family's own TTL.
public struct NativeBatchAnswer: Sendable, Hashable {
    /// One host's addresses of one family.
    public struct Record: Sendable, Hashable {
        public var host: String
        /// The family: `AddressFamily/ipv4` for `"type":1`, `AddressFamily/ipv6` for `"type":28`.
        public var family: AddressFamily
        /// The addresses, all of ``family``; empty for a negative answer.
        public var addresses: [IPAddress]
        public var ttlSeconds: UInt32
        public var stale: Bool

        public init(host: String, family: AddressFamily, addresses: [IPAddress], ttlSeconds: UInt32, stale: Bool = false) {
            self.host = host
            self.family = family
            self.addresses = addresses
            self.ttlSeconds = ttlSeconds
            self.stale = stale
        }
    }

    public var records: [Record]

    public init(records: [Record]) {
        self.records = records
    }

    /// The answer as compact JSON.
    public var jsonText: String {
        let records = records.map { record in
            var members: [(String, JSON)] = [
                ("host", .string(record.host)),
                ("ips", .array(record.addresses.map { .string($0.description) })),
                ("type", .integer(Int(record.family.recordType))),
                ("ttl", .integer(Int(record.ttlSeconds))),
            ]
            if record.stale { members.append(("stale", .bool(true))) }
            return JSON.object(members)
        }
        return JSON.object([("dns", .array(records))]).text
    }

    /// Reads a batch answer, checking every record: its type is 1 or 28, its addresses are of that family.
    /// - Throws: ``NativeFormatError`` saying what is wrong.
    public init(parsingJSON bytes: some Collection<UInt8>) throws(NativeFormatError) {
        let object = try JSONValue.parseObject(bytes, what: "the /resolve answer")
        guard case .array(let elements)? = object["dns"] else {
            throw NativeFormatError(object["dns"] == nil ? .missingMember : .wrongType, reason: "the /resolve answer has no \"dns\" array")
        }
        var records: [Record] = []
        for (index, element) in elements.enumerated() {
            let what = "record \(index + 1) of the /resolve answer"
            guard case .object(let record) = element else { throw NativeFormatError(.wrongType, reason: "\(what) is \(element.kind), not an object") }
            let family: AddressFamily
            let addresses: [IPAddress]?
            switch record["type"] {
            case .number(1):
                family = .ipv4
                addresses = try record.addresses("ips", in: what) { IPv4Address($0).map(IPAddress.v4) }
            case .number(28):
                family = .ipv6
                addresses = try record.addresses("ips", in: what) { IPv6Address($0).map(IPAddress.v6) }
            default:
                throw NativeFormatError(
                    record["type"] == nil ? .missingMember : .invalidValue,
                    reason: "\(what) has no \"type\" of 1 (A) or 28 (AAAA)"
                )
            }
            guard let addresses else { throw NativeFormatError(.missingMember, reason: "\(what) has no \"ips\"") }
            records.append(
                Record(
                    host: try record.string("host", in: what),
                    family: family,
                    addresses: addresses,
                    ttlSeconds: try record.seconds("ttl", in: what),
                    stale: try record.optionalBool("stale", in: what) ?? false
                )
            )
        }
        self.init(records: records)
    }
}
