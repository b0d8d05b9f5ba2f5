import HTTPDNSCore
import HTTPDNSWire
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Resolves through an HTTPDNS service's native API (`/d`, docs/WIRE-FORMATS.md §1) over HTTPS, addressed by IP.
///
/// - Several addresses of the service: each request goes to the healthiest; one that fails is skipped for a
///   cool-down that doubles with each failure, then probed again. Every attempt has its own timeout within the
///   request's budget (2 s by default).
/// - Answers are checked: the JSON is the wire format's, the name is the one asked, the addresses parse and are of
///   their family, the TTLs are whole seconds. Anything else is a failure of the address that sent it, and the next
///   address is asked; nothing malformed is ever an answer.
/// - Signed requests for an account (`/{account}/sign_d`), when configured.
///
/// The native API does not tell NXDOMAIN from "no address of this family": both come back as no addresses, and
/// this source reports them as no data.
///
/// Call ``shutdown()`` when done: it closes the kept-alive connections.
public final class NativeServiceSource: BatchResolutionSource {
    public struct Configuration: Sendable, HTTPSSourceConfiguration {
        /// The service's addresses, TLS and failover timing.
        public var connection: ServiceConnection
        /// The account to ask as, and how to sign. Default none: the unprefixed `/d`.
        public var account: NativeRequest.Account?
        /// The name in stats, logs and metric dimensions. Default `httpdns`.
        public var name: String = "httpdns"
        /// The most names one `/resolve` request carries, for pre-resolution in batches: the service's
        /// `maxHostsPerBatch` (5 by default). 1 turns batches off.
        public var maxHostsPerBatch: Int = 5

        public init(servers: [ServiceEndpoint]) { self.init(connection: ServiceConnection(servers: servers)) }

        public init(connection: ServiceConnection) { self.connection = connection }
    }

    public let configuration: Configuration
    public var name: String { configuration.name }
    public var upstreamDescription: String { configuration.upstreamDescription }

    private let client: ServiceClient
    private let unixTime: @Sendable () -> Int64

    /// - Throws: `ConfigurationError` naming a setting that cannot work (no servers, a budget of 0, an unreadable
    ///   trust-root file, a server name that is no host name).
    public init(
        configuration: Configuration,
        clock: any MonotonicClock = SystemMonotonicClock(),
        unixTime: @escaping @Sendable () -> Int64 = { Int64(time(nil)) },
        logger: Logger = Logger(label: "httpdns.client")
    ) throws(ConfigurationError) {
        self.configuration = configuration
        self.unixTime = unixTime
        client = try configuration.makeClient(maxAnswerBytes: 64 * 1024, clock: clock, logger: logger)
    }

    public func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        guard !families.isEmpty else { throw ResolutionError.noFamilies(host) }
        let request = NativeRequest(hosts: [host], families: families, account: configuration.account)
        return try await client.send(request.target(unixSeconds: unixTime()), accept: "application/json", host: host.value) {
            answer throws(ServiceClient.AttemptFailure) in
            try Self.sourceAnswer(answer, host: host, families: families)
        }
    }

    public var maxBatchSize: Int { max(1, configuration.maxHostsPerBatch) }

    /// Asks `/resolve` for every host at once (`/d` for one).
    public func queryBatch(_ hosts: [HostName], families: AddressFamilies) async throws(ResolutionError) -> [HostName: SourceAnswer] {
        guard let first = hosts.first, !families.isEmpty else {
            if let first = hosts.first { throw ResolutionError.noFamilies(first) }
            return [:]
        }
        var seen = Set<HostName>()
        let hosts = hosts.filter { seen.insert($0).inserted }
        if hosts.count == 1 {
            do {
                return [first: try await query(first, families: families)]
            } catch let error as ResolutionError {
                throw error
            } catch {
                throw ResolutionError(.internalError, "\(name) failed: \(error)", cause: error)
            }
        }
        let request = NativeRequest(hosts: hosts, families: families, account: configuration.account)
        let what = "\(first) and \(hosts.count - 1) more"
        return try await client.send(request.target(unixSeconds: unixTime()), accept: "application/json", host: first.value) {
            answer throws(ServiceClient.AttemptFailure) in
            try Self.batchAnswers(answer, hosts: hosts, families: families, what: what)
        }
    }

    /// Reads one address's answer to `/resolve`: every host asked, every family asked, nothing else.
    static func batchAnswers(_ answer: ServiceClient.Answer, hosts: [HostName], families: AddressFamilies, what: String)
        throws(ServiceClient.AttemptFailure) -> [HostName: SourceAnswer]
    {
        let bytes = try checkedBody(answer, what: what)
        let batch: NativeBatchAnswer
        do {
            batch = try NativeBatchAnswer(parsingJSON: bytes)
        } catch {
            throw .tryNext(ResolutionError(.malformedAnswer, "\(answer.endpoint) sent a malformed answer for \(what): \(error.reason)", cause: error))
        }
        var answers = Dictionary(hosts.map { ($0.value, SourceAnswer()) }, uniquingKeysWith: { first, _ in first })
        for record in batch.records {
            guard let found = answers[record.host], families.contains(record.family == .ipv4 ? .ipv4 : .ipv6) else {
                throw .tryNext(ResolutionError(.malformedAnswer, "\(answer.endpoint) answered \(record.host) \(record.family), which was not asked, for \(what)"))
            }
            guard (record.family == .ipv4 ? found.ipv4 == nil : found.ipv6 == nil) else {
                throw .tryNext(ResolutionError(.malformedAnswer, "\(answer.endpoint) answered \(record.host) \(record.family) twice, for \(what)"))
            }
            let v4 = record.addresses.compactMap { if case .v4(let address) = $0 { address } else { nil } }
            let v6 = record.addresses.compactMap { if case .v6(let address) = $0 { address } else { nil } }
            switch record.family {
            case .ipv4: answers[record.host]!.ipv4 = v4.isEmpty ? .negative(.noData, ttlSeconds: record.ttlSeconds) : .addresses(v4, ttlSeconds: record.ttlSeconds)
            case .ipv6: answers[record.host]!.ipv6 = v6.isEmpty ? .negative(.noData, ttlSeconds: record.ttlSeconds) : .addresses(v6, ttlSeconds: record.ttlSeconds)
            }
        }
        var result: [HostName: SourceAnswer] = [:]
        for host in hosts {
            let found = answers[host.value]!
            guard (!families.contains(.ipv4) || found.ipv4 != nil), (!families.contains(.ipv6) || found.ipv6 != nil) else {
                throw .tryNext(ResolutionError(.malformedAnswer, "\(answer.endpoint) left \(host) out of its answer for \(what)"))
            }
            result[host] = found
        }
        return result
    }

    /// The body of a 200, or the failure the status means: a 400 `InvalidHost` or `TooManyHosts` ends the lookup (no
    /// address would answer otherwise); anything else is this address's failure.
    static func checkedBody(_ answer: ServiceClient.Answer, what: String) throws(ServiceClient.AttemptFailure) -> [UInt8] {
        let bytes = Array(buffer: answer.body)
        guard answer.status == .ok else {
            let error = (try? NativeErrorBody(parsingJSON: bytes)).map { "\($0.code): \($0.message)" } ?? "no error body"
            let message = "\(answer.endpoint) answered \(answer.status.code) for \(what) (\(error))"
            switch answer.status.code {
            case 400 where (try? NativeErrorBody(parsingJSON: bytes))?.code == .invalidHost:
                throw .final(ResolutionError(.badName, message))
            case 400 where (try? NativeErrorBody(parsingJSON: bytes))?.code == .tooManyHosts:
                // The request is too big for the service, not this address's fault: every address would say so.
                throw .final(ResolutionError(.refused, message))
            case 403, 429, 503:
                // 403 too: a signature's expiry is judged by each address's clock, and an account may be missing on
                // one address during a rollout.
                throw .tryNext(ResolutionError(answer.status.code == 503 ? .serverFailure : .refused, message))
            default:
                throw .tryNext(ResolutionError(.malformedAnswer, message))
            }
        }
        return bytes
    }

    /// Reads one address's answer to `/d`.
    static func sourceAnswer(_ answer: ServiceClient.Answer, host: HostName, families: AddressFamilies) throws(ServiceClient.AttemptFailure)
        -> SourceAnswer
    {
        let bytes = try checkedBody(answer, what: host.value)
        let native: NativeAnswer
        do {
            native = try NativeAnswer(parsingJSON: bytes)
        } catch {
            throw .tryNext(ResolutionError(.malformedAnswer, "\(answer.endpoint) sent a malformed answer for \(host): \(error.reason)", cause: error))
        }
        guard native.host == host.value else {
            throw .tryNext(ResolutionError(.malformedAnswer, "\(answer.endpoint) answered for '\(native.host)' when asked for \(host)"))
        }
        func family<Address>(_ asked: Bool, _ addresses: [Address]?, _ label: String) throws(ServiceClient.AttemptFailure) -> FamilyAnswer<Address>? {
            guard asked else { return nil }
            guard let addresses else {
                throw .tryNext(ResolutionError(.malformedAnswer, "\(answer.endpoint) left \(label) out of its answer for \(host)"))
            }
            return addresses.isEmpty ? .negative(.noData, ttlSeconds: native.ttlSeconds) : .addresses(addresses, ttlSeconds: native.ttlSeconds)
        }
        return SourceAnswer(
            ipv4: try family(families.contains(.ipv4), native.ipv4, "ips"),
            ipv6: try family(families.contains(.ipv6), native.ipv6, "ipsv6")
        )
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
