import HTTPDNSCore
import HTTPDNSWire
import Logging
import NIOCore

/// Resolves through JSON DNS (`application/dns-json`, docs/WIRE-FORMATS.md §3) to a service addressed by IP:
/// `GET /dns-query?name=…&type=A|AAAA`, one request per family.
///
/// The same failover, budget, cool-downs and TLS rules as ``NativeServiceSource``. The answer is checked: `Status`
/// and `Question` are the wire format's, addresses are taken only from records of the type asked owned by the name
/// or by the CNAME chain from it, and `TTL`s are whole seconds. `Status` 3 is NXDOMAIN; after 2 or 5 the next
/// address is asked, the one that answered cooled down only when a later one answers.
///
/// Call ``shutdown()`` when done: it closes the kept-alive connections.
public final class JSONDNSSource: ResolutionSource {
    public struct Configuration: Sendable, HTTPSSourceConfiguration {
        /// The service's addresses (without a path, `/dns-query`), TLS and failover timing.
        public var connection: ServiceConnection
        /// The name in stats, logs and metric dimensions. Default `json-dns`.
        public var name: String = "json-dns"

        public init(servers: [ServiceEndpoint]) { self.init(connection: ServiceConnection(servers: servers)) }

        public init(connection: ServiceConnection) { self.connection = connection }
    }

    public let configuration: Configuration
    public var name: String { configuration.name }
    public var upstreamDescription: String { configuration.upstreamDescription }

    private let client: ServiceClient

    /// - Throws: `ConfigurationError` naming a setting that cannot work.
    public init(
        configuration: Configuration,
        clock: any MonotonicClock = SystemMonotonicClock(),
        logger: Logger = Logger(label: "httpdns.client")
    ) throws(ConfigurationError) {
        self.configuration = configuration.withDefaultPath("/dns-query")
        client = try self.configuration.makeClient(maxAnswerBytes: 64 * 1024, clock: clock, logger: logger)
    }

    public func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        guard !families.isEmpty else { throw ResolutionError.noFamilies(host) }
        async let ipv4: FamilyAnswer<IPAddress>? = families.contains(.ipv4) ? lookUp(host, .a) : nil
        async let ipv6: FamilyAnswer<IPAddress>? = families.contains(.ipv6) ? lookUp(host, .aaaa) : nil
        return SourceAnswer(ipv4: try await ipv4?.map { $0.compactMap(\.v4) }, ipv6: try await ipv6?.map { $0.compactMap(\.v6) })
    }

    private func lookUp(_ host: HostName, _ type: DNSRecordType) async throws(ResolutionError) -> FamilyAnswer<IPAddress> {
        try await client.send("?name=\(host.value)&type=\(type)", accept: "application/dns-json", host: host.value) {
            answer throws(ServiceClient.AttemptFailure) in
            try Self.familyAnswer(answer, host: host, type: type)
        }
    }

    /// Reads one address's JSON DNS answer to the question for `host` and `type`.
    static func familyAnswer(_ answer: ServiceClient.Answer, host: HostName, type: DNSRecordType) throws(ServiceClient.AttemptFailure)
        -> FamilyAnswer<IPAddress>
    {
        var from: String { "\(answer.endpoint)" }  // Described only for an error.
        func malformed(_ reason: String) -> ServiceClient.AttemptFailure {
            .tryNext(ResolutionError(.malformedAnswer, "\(from) sent a JSON DNS answer for \(host) that \(reason)"))
        }
        guard answer.status == .ok else {
            let error = ResolutionError(answer.status.code == 503 ? .serverFailure : .malformedAnswer, "\(from) answered \(answer.status.code) for \(host)")
            // Our queries are well formed: even a 400 is that address's fault.
            throw .tryNext(error)
        }
        guard case .object(let object)? = try? JSONValue(parsing: Array(buffer: answer.body)) else { throw malformed("is not a JSON object") }
        guard case .number(let status)? = object["Status"] else { throw malformed("has no Status") }
        guard case .array(let questions)? = object["Question"], questions.count == 1, case .object(let question) = questions[0],
            case .string(let questionName)? = question["name"], case .number(let questionType)? = question["type"],
            questionName.lowercased().trimmingSuffixDot == host.value, questionType == Double(type.rawValue)
        else { throw malformed("does not repeat the question") }
        switch status {
        case 0: break
        case 3: return .negative(.nameNotFound, ttlSeconds: nil)
        case 2: throw .tryNextAnswered(ResolutionError(.serverFailure, "\(from) answered SERVFAIL for \(host)"))
        case 5: throw .tryNextAnswered(ResolutionError(.refused, "\(from) answered REFUSED for \(host)"))
        default: throw malformed("has Status \(status)")
        }
        // The records as DNS holds them, read by the same rules as DoH's.
        var records: [DNSMessage.Record] = []
        if let value = object["Answer"] {
            guard case .array(let elements) = value else { throw malformed("has an Answer that is no array") }
            for element in elements {
                guard case .object(let record) = element, case .string(let name)? = record["name"], case .number(let recordType)? = record["type"],
                    let recordType = UInt16(exactly: recordType), case .number(let ttl)? = record["TTL"], let ttl = UInt32(exactly: ttl),
                    case .string(let data)? = record["data"]
                else { throw malformed("has a record without name, type, TTL and data") }
                records.append(Self.record(name: name, type: DNSRecordType(rawValue: recordType), ttl: ttl, data: data))
            }
        }
        switch DoHSource.answerRecords(records, host: host, type: type, negativeTTL: nil) {
        case .success(let answer): return answer
        case .failure(let failure): throw malformed(failure.reason)
        }
    }

    /// A JSON record's `data` as RDATA: a name in wire form for CNAME, an address for A and AAAA (empty when it is
    /// no address of the type's family, which the reader refuses), nothing for other types, which are not read.
    static func record(name: String, type: DNSRecordType, ttl: UInt32, data: String) -> DNSMessage.Record {
        switch type {
        case .cname:
            var wire: [UInt8] = []
            for label in data.lowercased().trimmingSuffixDot.split(separator: ".") {
                wire.append(UInt8(truncatingIfNeeded: label.utf8.count))
                wire.append(contentsOf: label.utf8)
            }
            return DNSMessage.Record(name: name, type: type, ttlSeconds: ttl, data: wire + [0])
        case .a:
            return IPv4Address(data).map { DNSMessage.Record(name: name, address: .v4($0), ttlSeconds: ttl) }
                ?? DNSMessage.Record(name: name, type: type, ttlSeconds: ttl, data: [])
        case .aaaa:
            return IPv6Address(data).map { DNSMessage.Record(name: name, address: .v6($0), ttlSeconds: ttl) }
                ?? DNSMessage.Record(name: name, type: type, ttlSeconds: ttl, data: [])
        default:
            return DNSMessage.Record(name: name, type: type, ttlSeconds: ttl, data: [])
        }
    }

    /// Counts every address healthy again and opens new connections: see `HostResolver/networkChanged(concurrency:)`.
    public func networkChanged() async {
        await client.networkChanged()
    }

    /// Closes the kept-alive connections. Lookups after it fail.
    public func shutdown() async {
        await client.shutdown()
    }
}

extension String {
    var trimmingSuffixDot: String { hasSuffix(".") ? String(dropLast()) : self }
}
