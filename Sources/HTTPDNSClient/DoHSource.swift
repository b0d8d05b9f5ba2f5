import HTTPDNSCore
import HTTPDNSWire
import Logging
import NIOCore

/// Resolves through DNS over HTTPS (RFC 8484) to a service addressed by IP: a DNS query per address family, sent
/// by GET (`?dns=` base64url) or POST (`application/dns-message`), at the URL's path or `/dns-query`.
///
/// The same failover, budget, cool-downs and TLS rules as ``NativeServiceSource``. Answers are checked as a
/// resolver's are: a response to our query (QR set, ID 0, the same question), addresses taken only from records
/// owned by the name or by the CNAME chain from it, of the type asked. NXDOMAIN and NODATA are answers, with the
/// negative TTL of the authority's SOA (RFC 2308) when there is one; after SERVFAIL or REFUSED the next address is
/// asked, the one that answered cooled down only when a later one answers the query.
///
/// As a `MessageRelaying`, it POSTs any DNS message as it is (the service's upstream for the types it relays).
///
/// Call ``shutdown()`` when done: it closes the kept-alive connections.
public final class DoHSource: ResolutionSource, MessageRelaying {
    public struct Configuration: Sendable, HTTPSSourceConfiguration {
        public enum Method: Sendable, Hashable {
            case get, post
        }

        /// The service's addresses (without a path, `/dns-query`), TLS and failover timing.
        public var connection: ServiceConnection
        /// GET (the default, cacheable by HTTP caches) or POST.
        public var method: Method = .get
        /// The name in stats, logs and metric dimensions. Default `doh`.
        public var name: String = "doh"

        public init(servers: [ServiceEndpoint]) { self.init(connection: ServiceConnection(servers: servers)) }

        public init(connection: ServiceConnection) { self.connection = connection }
    }

    public let configuration: Configuration
    public var name: String { configuration.name }
    public var upstreamDescription: String { configuration.upstreamDescription }

    /// Internal, not private: tests read its health.
    let client: ServiceClient

    /// - Throws: `ConfigurationError` naming a setting that cannot work.
    public init(
        configuration: Configuration,
        clock: any MonotonicClock = SystemMonotonicClock(),
        logger: Logger = Logger(label: "httpdns.client")
    ) throws(ConfigurationError) {
        self.configuration = configuration.withDefaultPath("/dns-query")
        client = try self.configuration.makeClient(maxAnswerBytes: DNSMessage.maxSize, clock: clock, logger: logger)
    }

    public func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        try await FamilyQueries.answer(host, families) { family throws(ResolutionError) in try await self.lookUp(host, family) }
    }

    private func lookUp(_ host: HostName, _ family: AddressFamily) async throws(ResolutionError) -> FamilyAnswer<IPAddress> {
        let (bytes, type) = try FamilyQueries.query(host, family)
        let accept = "application/dns-message"
        let read = { (answer: ServiceClient.Answer) throws(ServiceClient.AttemptFailure) -> FamilyAnswer<IPAddress> in
            try Self.familyAnswer(answer, host: host, type: type)
        }
        switch configuration.method {
        case .get:
            return try await client.send("?dns=\(Base64URL.encode(bytes))", accept: accept, host: host.value, read)
        case .post:
            return try await client.send("", accept: accept, body: (accept, bytes), host: host.value, read)
        }
    }

    /// Sends `query`, a DNS message of any type, as it is (POST, `application/dns-message`) and returns the answer as
    /// the service sent it: every section kept. NXDOMAIN and NODATA are answers like any other; SERVFAIL and REFUSED
    /// are too when no other address is left to ask.
    /// - Throws: `ResolutionError`: `badName` for a query shorter than a DNS header or longer than 65,535 bytes,
    ///   else as for a lookup.
    public func send(_ query: [UInt8]) async throws -> [UInt8] {
        guard query.count >= 12, query.count <= DNSMessage.maxSize else {
            throw ResolutionError(.badName, "a DNS query of \(query.count) bytes cannot be sent: it must be 12 to 65,535 bytes")
        }
        let accept = "application/dns-message"
        // A SERVFAIL or REFUSED moves on to the next address; the last of them is the answer when none does better.
        var refusal: [UInt8]?
        do {
            return try await client.send("", accept: accept, body: (accept, query), host: "a relayed query of \(query.count) bytes") {
                answer throws(ServiceClient.AttemptFailure) -> [UInt8] in
                var from: String { "\(answer.endpoint)" }  // Described only for an error.
                guard answer.status == .ok else {
                    throw .tryNext(ResolutionError(answer.status.code == 503 ? .serverFailure : .malformedAnswer, "\(from) answered \(answer.status.code)"))
                }
                do throws(ResolutionError) {
                    return try RelayAnswer.accept(Array(buffer: answer.body), to: query, from: from, refusal: &refusal)
                } catch {
                    throw .answer(error)
                }
            }
        } catch {
            if let refusal, error.code != .shutdown { return refusal }
            throw error
        }
    }

    /// Reads one address's DoH response to the query for `host` and `type`.
    static func familyAnswer(_ answer: ServiceClient.Answer, host: HostName, type: DNSRecordType) throws(ServiceClient.AttemptFailure)
        -> FamilyAnswer<IPAddress>
    {
        var from: String { "\(answer.endpoint)" }  // Described only for an error.
        guard answer.status == .ok else {
            let error = ResolutionError(answer.status.code == 503 ? .serverFailure : .malformedAnswer, "\(from) answered \(answer.status.code) for \(host)")
            // Our queries are well formed: even a 400 is that address's fault.
            throw .tryNext(error)
        }
        let message: DNSMessage
        do {
            message = try DNSMessage(parsing: Array(buffer: answer.body))
        } catch {
            throw .tryNext(ResolutionError(.malformedAnswer, "\(from) sent a malformed DNS response for \(host): \(error.reason)", cause: error))
        }
        switch familyAnswer(message, from: from, host: host, type: type) {
        case .success(let answer): return answer
        case .failure(let error): throw .answer(error)
        }
    }

    /// Reads the DNS response `message` to the query (ID 0) for `host` and `type`, from the server `from`: DoH's and
    /// DoT's answers alike. A failure is that server's: the next may answer.
    static func familyAnswer(_ message: DNSMessage, from: @autoclosure () -> String, host: HostName, type: DNSRecordType) -> Result<FamilyAnswer<IPAddress>, ResolutionError> {
        guard message.isResponse, message.id == 0, message.questions.count == 1,
            message.questions[0].type == type, message.questions[0].recordClass == 1,
            message.questions[0].name.lowercased() == host.value
        else {
            return .failure(ResolutionError(.malformedAnswer, "\(from()) sent a response that does not answer the query for \(host) \(type)"))
        }
        switch message.responseCode {
        case .noError:
            break
        case .nameError:
            return .success(.negative(.nameNotFound, ttlSeconds: negativeTTL(message)))
        case .serverFailure:
            return .failure(ResolutionError(.serverFailure, "\(from()) answered SERVFAIL for \(host)"))
        case .refused:
            return .failure(ResolutionError(.refused, "\(from()) answered REFUSED for \(host)"))
        default:
            return .failure(ResolutionError(.malformedAnswer, "\(from()) answered \(message.responseCode) for \(host)"))
        }
        switch answerRecords(message.answers, host: host, type: type, negativeTTL: negativeTTL(message)) {
        case .success(let answer): return .success(answer)
        case .failure(let reason): return .failure(ResolutionError(.malformedAnswer, "\(from()) sent an answer for \(host) that \(reason.reason)"))
        }
    }

    /// The addresses `records` give for `host` and `type`: those owned by the name, or by the last name of the CNAME
    /// chain from it, with the smallest TTL along the way; no data, with `negativeTTL` (no longer than the chain's
    /// records live), when there are none. DoH and JSON DNS answers are both read this way. The failure is a reason,
    /// for the caller's message.
    static func answerRecords(
        _ records: [DNSMessage.Record],
        host: HostName,
        type: DNSRecordType,
        negativeTTL: UInt32?
    ) -> Result<FamilyAnswer<IPAddress>, ChainFailure> {
        var owner = host.value
        var ttl = UInt32.max
        var seen: Set<String> = [owner]
        while let alias = records.first(where: { $0.type == .cname && $0.name.lowercased().trimmingSuffixDot == owner }) {
            guard let target = uncompressedName(alias.data), seen.insert(target).inserted else {
                return .failure(ChainFailure(reason: "has a CNAME chain that loops or cannot be read"))
            }
            ttl = min(ttl, alias.ttlSeconds)
            owner = target
        }
        var addresses: [IPAddress] = []
        for record in records where record.type == type && record.name.lowercased().trimmingSuffixDot == owner {
            guard let address = record.address else { return .failure(ChainFailure(reason: "has a \(type) record whose data is no address")) }
            addresses.append(address)
            ttl = min(ttl, record.ttlSeconds)
        }
        guard !addresses.isEmpty else {
            return .success(.negative(.noData, ttlSeconds: ttl == .max ? negativeTTL : negativeTTL.map { min($0, ttl) }))
        }
        return .success(.addresses(addresses, ttlSeconds: ttl))
    }

    /// Why answer records could not be read.
    struct ChainFailure: Error {
        let reason: String
    }

    /// RFC 2308 §5: the smaller of the authority SOA's TTL and its MINIMUM field; nil without an SOA.
    static func negativeTTL(_ message: DNSMessage) -> UInt32? {
        guard let soa = message.authorities.first(where: { $0.type == .soa }) else { return nil }
        let data = soa.data
        guard data.count >= 4 else { return soa.ttlSeconds }
        let minimum = data[(data.count - 4)...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return min(soa.ttlSeconds, minimum)
    }

    /// A name in RDATA (uncompressed labels), as lower-case text without the trailing dot; nil if it is not one.
    static func uncompressedName(_ data: [UInt8]) -> String? {
        var labels: [String] = []
        var index = 0
        while index < data.count {
            let length = Int(data[index])
            if length == 0 { return index + 1 == data.count ? labels.joined(separator: ".").lowercased() : nil }
            // A dot inside a label would read as two labels in text: such a name is not followed.
            guard length < 64, index + 1 + length <= data.count, !data[(index + 1)...(index + length)].contains(UInt8(ascii: ".")) else {
                return nil
            }
            labels.append(String(decoding: data[(index + 1)...(index + length)], as: UTF8.self))
            index += 1 + length
        }
        return nil
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

extension IPAddress {
    var v4: IPv4Address? {
        if case .v4(let address) = self { address } else { nil }
    }

    var v6: IPv6Address? {
        if case .v6(let address) = self { address } else { nil }
    }
}

extension FamilyAnswer {
    /// The same answer with its addresses mapped.
    func map<Other>(_ transform: ([Address]) -> [Other]) -> FamilyAnswer<Other> {
        switch self {
        case .addresses(let addresses, let ttl): .addresses(transform(addresses), ttlSeconds: ttl)
        case .negative(let kind, let ttl): .negative(kind, ttlSeconds: ttl)
        }
    }
}

extension ServiceEndpoint {
    /// The same endpoint at `path`.
    func withPath(_ path: String) -> ServiceEndpoint {
        // Built from its own description, which always parses back.
        (try? ServiceEndpoint(parsing: "\(self)\(path)")) ?? self
    }
}
