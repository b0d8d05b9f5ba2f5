import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSSettings
import Logging
import Metrics
import ServiceLifecycle

/// The service's upstream, as the settings say: its sources in order (``ServeSettings/upstreams``), each counted,
/// asked through a `FailoverSource` when there are several. The sources are c-ares (plain DNS, over UDP or TCP),
/// DNS over TLS (`DoTSource`) and DNS over HTTPS (`DoHSource`), each with its servers in failover.
///
/// ``resolver`` is the cache's source and so, as a `MessageRelaying`, the relay of every type besides A and AAAA.
/// As a `Service` it shuts the sources down at the group's graceful shutdown.
final class ServeUpstream: Service {
    static let metricName = CountedSource.metricName
    static let help = CountedSource.help

    /// Each source, counted, in the order the settings give.
    let members: [CountedSource]
    /// What the cache asks: the only member, or a `FailoverSource` over them all.
    let resolver: any ResolutionSource & MessageRelaying
    /// The upstreams as the start-up log names them: `dot via tls://192.0.2.53#dns.example.net`.
    var logDescription: String { members.map(\.logDescription).joined(separator: ", then ") }
    /// The members' transports: `tls`, `https`, `udp`, `tcp`, or several joined by `+` in order.
    var transport: String { members.map(\.transport).joined(separator: "+") }
    var name: String { resolver.name }

    /// The members whose path to their upstreams is unencrypted (plain DNS).
    var unencrypted: [CountedSource] { members.filter { !$0.isEncrypted } }

    /// Makes the sources the settings ask for.
    /// - Throws: `ConfigurationError` or `ResolutionError` when a source cannot be made; ``SettingError`` when the
    ///   upstreams' trust file holds no usable certificate.
    init(settings: ServeSettings, logger: Logger) throws {
        var members: [CountedSource] = []
        do {
            for upstream in settings.upstreams {
                switch upstream {
                case .plain:
                    let cares = try CAresSource(configuration: settings.upstream, logger: logger)
                    members.append(CountedSource(cares, transport: "\(settings.upstream.transport)", logDescription: cares.upstreamDescription))
                case .dot(let configuration):
                    let dot = try Self.named { () throws(ConfigurationError) in try DoTSource(configuration: configuration, logger: logger) }
                    let servers = configuration.servers.map { "\($0)\(configuration.serverName.map { "#\($0)" } ?? "")" }
                    members.append(CountedSource(dot, transport: "tls", logDescription: "\(dot.name) via \(servers.joined(separator: ", "))"))
                case .doh(let configuration):
                    let doh = try Self.named { () throws(ConfigurationError) in try DoHSource(configuration: configuration, logger: logger) }
                    let name = configuration.connection.serverName
                    let servers = doh.configuration.connection.servers.map { "\($0)\(name.map { "#\($0)" } ?? "")" }
                    members.append(CountedSource(doh, transport: "https", logDescription: "\(doh.name) via \(servers.joined(separator: ", "))"))
                }
            }
        } catch {
            // What was made before the failure is let go.
            let made = members
            Task { for member in made { await member.shutdown() } }
            throw error
        }
        self.members = members
        let plain = Set(members.indices.filter { !members[$0].isEncrypted })
        resolver = members.count == 1 ? members[0] : FailoverSource(sources: members, plain: plain, logger: logger)
    }

    /// An encrypted source, its trust file's failure named by the setting a user wrote.
    private static func named<Source>(_ make: () throws(ConfigurationError) -> Source) throws -> Source {
        do {
            return try make()
        } catch {
            guard error.key == "cacert" else { throw error }
            throw SettingError(.unreadableFile, "\(ServeSettings.upstreamCACert.names): \(error.reason)", cause: error)
        }
    }

    func run() async throws {
        try? await gracefulShutdown()
        await resolver.shutdown()
    }

    func shutdown() async { await resolver.shutdown() }
}

/// One source of the service's upstream, every query it sends counted by source, transport, kind and outcome in
/// `httpdns_upstream_queries_total`.
final class CountedSource: ResolutionSource, MessageRelaying {
    static let metricName = "httpdns_upstream_queries_total"
    /// The help of the family this records, for the exposition.
    static let help = [
        metricName:
            "Queries sent upstream by source, transport (udp, tcp, tls, https), kind (address: A and AAAA; relay: every other type) and outcome."
    ]

    let source: any ResolutionSource & MessageRelaying
    /// `udp` (with c-ares's retry over TCP of a truncated answer), `tcp`, `tls` or `https`.
    let transport: String
    /// One counter per kind and outcome, made up front: c-ares completes queries on its own thread.
    private let counters: [String: Counter]

    /// Whether the path to the upstreams is encrypted (DNS over TLS or over HTTPS).
    var isEncrypted: Bool { transport == "tls" || transport == "https" }

    /// The source and its servers as the start-up log names them: `dot via tls://192.0.2.53#dns.example.net`.
    let logDescription: String

    init(_ source: any ResolutionSource & MessageRelaying, transport: String, logDescription: String) {
        self.source = source
        self.transport = transport
        self.logDescription = logDescription
        let outcomes = ["success"] + ResolutionError.Code.all.filter { $0 != .noFamilies }.map(\.description)
        var counters: [String: Counter] = [:]
        for kind in ["address", "relay"] {
            for outcome in outcomes {
                counters["\(kind)/\(outcome)"] = Counter(
                    label: Self.metricName,
                    dimensions: [("source", source.name), ("transport", transport), ("kind", kind), ("outcome", outcome)]
                )
            }
        }
        self.counters = counters
    }

    var name: String { source.name }
    var upstreamDescription: String { source.upstreamDescription }

    func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        do {
            let answer = try await source.query(host, families: families)
            count("address", Self.outcome(of: answer))
            return answer
        } catch {
            count("address", Self.outcome(of: error))
            throw error
        }
    }

    func startQuery(
        _ host: HostName,
        families: AddressFamilies,
        completion: @escaping @Sendable (Result<SourceAnswer, ResolutionError>) -> Void
    ) {
        source.startQuery(host, families: families) { [self] result in
            switch result {
            case .success(let answer): count("address", Self.outcome(of: answer))
            case .failure(let error): count("address", Self.outcome(of: error))
            }
            completion(result)
        }
    }

    func send(_ query: [UInt8]) async throws -> [UInt8] {
        do {
            let answer = try await source.send(query)
            // The answer's RCODE, in the vocabulary of the lookups': an answer is a success unless it says otherwise.
            let outcome: ResolutionError.Code? =
                switch answer.count >= 4 ? answer[3] & 0x0F : 0 {
                case 2: .serverFailure
                case 3: .nameNotFound
                case 5: .refused
                default: nil
                }
            count("relay", outcome?.description ?? "success")
            return answer
        } catch {
            count("relay", Self.outcome(of: error))
            throw error
        }
    }

    func networkChanged() async { await source.networkChanged() }

    func shutdown() async { await source.shutdown() }

    private func count(_ kind: String, _ outcome: String) {
        (counters["\(kind)/\(outcome)"] ?? counters["\(kind)/\(ResolutionError.Code.internalError)"])?.increment()
    }

    /// As the cache names an answer's outcome in `httpdns_resolutions_total`.
    private static func outcome(of answer: SourceAnswer) -> String {
        SourceAnswer.outcomeName(of: answer)
    }

    private static func outcome(of error: any Error) -> String {
        ((error as? ResolutionError)?.code ?? .internalError).description
    }
}
