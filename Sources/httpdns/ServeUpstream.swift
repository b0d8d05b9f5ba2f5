import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSSettings
import Logging
import Metrics
import ServiceLifecycle

/// The service's upstream, as the settings say: c-ares (plain DNS, over UDP or TCP) or DNS over TLS (`DoTSource`, its
/// servers in failover). It is the cache's source and so, as a `MessageRelaying`, the relay of every type besides A
/// and AAAA; every query it sends is counted by transport in `httpdns_upstream_queries_total`. As a `Service` it
/// shuts the source down at the group's graceful shutdown.
final class ServeUpstream: ResolutionSource, MessageRelaying, Service {
    static let metricName = "httpdns_upstream_queries_total"
    /// The help of the family this records, for the exposition.
    static let help = [
        metricName: "Queries sent upstream by source, transport (udp, tcp, tls), kind (address: A and AAAA; relay: every other type) and outcome."
    ]

    let source: any ResolutionSource & MessageRelaying
    /// `udp` (with c-ares's retry over TCP of a truncated answer), `tcp` or `tls`.
    let transport: String
    /// The upstreams as the start-up log names them: `dot via tls://192.0.2.53#dns.example.net`.
    let logDescription: String
    /// One counter per kind and outcome, made up front: c-ares completes queries on its own thread.
    private let counters: [String: Counter]

    /// Whether the path to the upstreams is encrypted (DNS over TLS).
    var isEncrypted: Bool { transport == "tls" }

    /// Makes the source the settings ask for.
    /// - Throws: `ConfigurationError` or `ResolutionError` when the source cannot be made; ``SettingError`` when the
    ///   upstreams' trust file holds no usable certificate.
    init(settings: ServeSettings, logger: Logger) throws {
        if let dot = settings.dot {
            source = try Self.dotSource(dot, logger: logger)
            transport = "tls"
            let servers = dot.servers.map { "\($0)\(dot.serverName.map { "#\($0)" } ?? "")" }
            logDescription = "\(dot.name) via \(servers.joined(separator: ", "))"
        } else {
            let cares = try CAresSource(configuration: settings.upstream, logger: logger)
            source = cares
            transport = "\(settings.upstream.transport)"
            logDescription = cares.upstreamDescription
        }
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

    /// The DNS-over-TLS source, its trust file's failure named by the setting a user wrote.
    private static func dotSource(_ configuration: DoTSource.Configuration, logger: Logger) throws -> DoTSource {
        do {
            return try DoTSource(configuration: configuration, logger: logger)
        } catch {
            guard error.key == "cacert" else { throw error }
            throw SettingError(.unreadableFile, "\(ServeSettings.upstreamCACert.names): \(error.reason)", cause: error)
        }
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
