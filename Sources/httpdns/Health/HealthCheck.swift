import AsyncHTTPClient
import Foundation
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSNetworking
import HTTPDNSSettings
import HTTPDNSSynchronization
import NIOCore
import NIOSSL

/// The sources `httpdns health` asks, each on its own, and one round of asking them all at once.
final class HealthCheck: Sendable {
    private struct ServiceProbe: Sendable {
        enum Transport: Sendable {
            /// An HTTPDNS service, through its RFC 8484 endpoint, which tells NXDOMAIN from no data (the native API
            /// does not), so that a rewritten NXDOMAIN (H1) can be told.
            case doh(ServiceEndpoint, DoHSource)
            /// A DNS-over-TLS server, with its one server.
            case dot(DoTEndpoint, DoTSource)
        }

        let transport: Transport

        var source: any ResolutionSource {
            switch transport {
            case .doh(_, let source): source
            case .dot(_, let source): source
            }
        }

        /// The service's URL, or the DoT server's `tls://` address.
        var description: String {
            switch transport {
            case .doh(let endpoint, _): endpoint.description
            case .dot(let endpoint, _): endpoint.description
            }
        }
    }

    private struct DNSProbe: Sendable {
        let server: DNSServerAddress
        let source: CAresSource
    }

    private let settings: HealthSettings
    private let services: [ServiceProbe]
    private let dnsServers: [DNSProbe]
    private let hijackGuard: HijackGuard
    private let tls: TLSConfiguration

    /// - Throws: the library's error for a configuration it refuses (a `--cacert` that is not PEM); whatever was
    ///   started is shut down first.
    init(settings: HealthSettings, dnsServers: [DNSServerAddress]) async throws {
        self.settings = settings
        var guardConfiguration = HijackGuard.Configuration()
        guardConfiguration.privateAnswerAllowList = settings.allowPrivate
        hijackGuard = HijackGuard(configuration: guardConfiguration)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        var services: [ServiceProbe] = []
        var probes: [DNSProbe] = []
        do {
            if let connection = settings.service {
                if let path = connection.extraTrustRootsPEMFile {
                    let certificates: [NIOSSLCertificate]
                    do {
                        certificates = try NIOSSLCertificate.fromPEMFile(path)
                    } catch {
                        throw ConfigurationError(.unreadable, key: "cacert", reason: "\(path) is not a PEM certificate file: \(error)", cause: error)
                    }
                    guard !certificates.isEmpty else { throw ConfigurationError(.unreadable, key: "cacert", reason: "\(path) holds no certificate") }
                    tls.additionalTrustRoots = [.certificates(certificates)]
                }
                for endpoint in connection.servers {
                    // One endpoint each, so each is judged on its own answers rather than failed over.
                    var single = connection
                    single.servers = [endpoint]
                    var configuration = DoHSource.Configuration(connection: single)
                    configuration.name = endpoint.description
                    services.append(ServiceProbe(transport: .doh(endpoint, try DoHSource(configuration: configuration))))
                }
            }
            if let dot = settings.dot {
                for endpoint in dot.servers {
                    // One server each, as for the services. Its certificate is checked by the source itself when it
                    // connects (chain, name or address, pins) and its expiry read from that connection.
                    var configuration = dot
                    configuration.servers = [endpoint]
                    configuration.name = endpoint.description
                    services.append(ServiceProbe(transport: .dot(endpoint, try DoTSource(configuration: configuration))))
                }
            }
            for server in dnsServers {
                var configuration = settings.cares
                configuration.servers = [server]
                configuration.name = server.description
                probes.append(DNSProbe(server: server, source: try CAresSource(configuration: configuration)))
            }
        } catch {
            for service in services { await service.source.shutdown() }
            for probe in probes { await probe.source.shutdown() }
            throw error
        }
        self.tls = tls
        self.services = services
        self.dnsServers = probes
    }

    func shutdown() async {
        for service in services { await service.source.shutdown() }
        for probe in dnsServers { await probe.source.shutdown() }
    }

    /// One result of a source for a name, and how long it took.
    private struct Asked: Sendable {
        let result: HealthReport.Result
        let milliseconds: Double
        let error: ResolutionError?
    }

    /// Asks every source for every probe name, and reads every service's certificate, all at once: the round takes
    /// about as long as its slowest probe.
    func run() async -> HealthReport {
        let start = ContinuousClock.now
        let hosts = settings.hosts
        var certificates: [Int: CertificateProbe.Outcome] = [:]
        var asked: [String: Asked] = [:]
        await withTaskGroup(of: (String, Asked?, (Int, CertificateProbe.Outcome)?).self) { group in
            for (index, service) in services.enumerated() {
                if case .doh(let endpoint, _) = service.transport, endpoint.scheme == .https {
                    group.addTask { [settings, tls] in
                        ("", nil, (index, await CertificateProbe.read(endpoint, settings: settings, tls: tls)))
                    }
                }
                for (hostIndex, host) in hosts.enumerated() {
                    group.addTask { [timeout = settings.timeout] in ("s\(index)/\(hostIndex)", await Self.ask(service.source, host, timeout: timeout), nil) }
                }
            }
            for (index, probe) in dnsServers.enumerated() {
                for (hostIndex, host) in hosts.enumerated() {
                    group.addTask { [timeout = settings.timeout] in ("d\(index)/\(hostIndex)", await Self.ask(probe.source, host, timeout: timeout), nil) }
                }
            }
            for await (key, answer, certificate) in group {
                if let answer { asked[key] = answer }
                if let (index, outcome) = certificate { certificates[index] = outcome }
            }
        }

        // A DoT server's certificate passed the source's checks when a lookup was answered over its connection:
        // its expiry is read from that connection.
        for (index, service) in services.enumerated() {
            guard case .dot(_, let source) = service.transport else { continue }
            guard hosts.indices.contains(where: { asked["s\(index)/\($0)"]?.result.answered == true }) else { continue }
            certificates[index] = .accepted(daysLeft: CertificateProbe.daysLeft(await source.certificateNotValidAfter(serverAt: 0)))
        }
        var serviceRows: [HealthReport.Service] = []
        for (index, probe) in services.enumerated() {
            let answers = hosts.indices.compactMap { asked["s\(index)/\($0)"] }
            serviceRows.append(serviceRow(probe, answers: answers, certificate: certificates[index]))
        }
        let dnsRows = dnsServers.enumerated().map { index, probe in
            let answers = hosts.indices.compactMap { asked["d\(index)/\($0)"] }
            let first = answers.first { $0.result.answered }
            return HealthReport.DNSServer(
                address: probe.server.description,
                reachable: first != nil,
                latencyMs: first?.milliseconds,
                error: first == nil ? answers.compactMap(\.error).first.map(\.message) ?? "no answer" : nil
            )
        }
        let probes = hosts.enumerated().map { hostIndex, host in
            probe(host, services: services.indices.map { asked["s\($0)/\(hostIndex)"] }, dns: dnsServers.indices.map { asked["d\($0)/\(hostIndex)"] })
        }
        let elapsed = ContinuousClock.now - start
        return HealthReport(
            services: serviceRows,
            dnsServers: dnsRows,
            probes: probes,
            durationMs: Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15,
            expiryWarningDays: settings.expiryWarningDays
        )
    }

    private func serviceRow(_ probe: ServiceProbe, answers: [Asked], certificate: CertificateProbe.Outcome?) -> HealthReport.Service {
        let first = answers.first { $0.result.answered }
        let transport: HealthReport.Transport
        let isPlainHTTP: Bool
        switch probe.transport {
        case .doh(let endpoint, _): (transport, isPlainHTTP) = (.doh, endpoint.scheme == .http)
        case .dot: (transport, isPlainHTTP) = (.dot, false)
        }
        var row = HealthReport.Service(
            url: probe.description,
            transport: transport,
            reachable: first != nil,
            latencyMs: first?.milliseconds,
            certificate: nil,
            error: nil,
            isPlainHTTP: isPlainHTTP
        )
        // A certificate the lookups refused (its pins, say) is not accepted, whatever the certificate probe saw.
        let rejection = answers.compactMap(\.error).first { $0.code == .certificateRejected }
        switch certificate {
        case .accepted(let daysLeft)?:
            row.certificate = .init(valid: rejection == nil, daysLeft: daysLeft, problem: rejection?.message)
            row.reachable = true  // The certificate probe's request was answered.
        case .rejected(let reason)?:
            row.certificate = .init(valid: false, daysLeft: nil, problem: reason)
            row.reachable = true  // It answered the handshake: reachable, but not to be trusted.
        case .unreachable?, nil:
            if let rejection {
                row.certificate = .init(valid: false, daysLeft: nil, problem: rejection.message)
                row.reachable = true
            }
        }
        if !row.reachable { row.error = answers.compactMap(\.error).first?.message ?? "no answer" }
        return row
    }

    /// A probe name's answers side by side, whether they agree, and the guard's verdict on each DNS server's answer
    /// against the first service that answered.
    private func probe(_ host: HostName, services: [Asked?], dns: [Asked?]) -> HealthReport.Probe {
        var answers: [HealthReport.Answer] = []
        for (index, asked) in services.enumerated() {
            answers.append(.init(source: self.services[index].description, trusted: true, result: asked?.result ?? .failed(code: "internal_error", message: "not asked")))
        }
        for (index, asked) in dns.enumerated() {
            answers.append(.init(source: dnsServers[index].server.description, trusted: false, result: asked?.result ?? .failed(code: "internal_error", message: "not asked")))
        }
        let trusted: HijackGuard.TrustedView? = answers.lazy.filter(\.trusted).compactMap { answer -> HijackGuard.TrustedView? in
            switch answer.result {
            case .addresses(let addresses): .addresses(addresses)
            case .nameNotFound: .nameNotFound
            case .noData: .addresses([])
            case .failed: nil
            }
        }.first
        // Each DNS server's answer judged on its own; the probe's verdict is the worst of them.
        var verdict = HijackVerdict.ok
        var verdictSource: String?
        for index in answers.indices where !answers[index].trusted {
            let addresses: [IPAddress]
            switch answers[index].result {
            case .addresses(let found): addresses = found
            case .nameNotFound, .noData: addresses = []
            case .failed: continue
            }
            let judged = hijackGuard.judge(addresses, host: host, trusted: trusted)
            answers[index].verdict = judged
            if judged.level > verdict.level {
                verdict = judged
                verdictSource = answers[index].source
            }
        }
        let answered = answers.map(\.result).filter(\.answered)
        let agree = answered.dropFirst().allSatisfy { $0.agrees(with: answered[0]) }
        return HealthReport.Probe(host: host.value, answers: answers, agree: agree, verdict: verdict, verdictSource: verdictSource)
    }

    /// Asks `source` for `host`, within `timeout` whatever the source's own timeouts do.
    private static func ask(_ source: any ResolutionSource, _ host: HostName, timeout: Duration) async -> Asked {
        let start = ContinuousClock.now
        func elapsed() -> Double {
            let duration = ContinuousClock.now - start
            return Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        }
        do {
            guard let answer = try await withDeadline(.now() + TimeAmount(timeout), { try await source.query(host, families: .all) }) else {
                let milliseconds = Int(timeout / .milliseconds(1))
                let error = ResolutionError(.timeout, "\(source.upstreamDescription) did not answer for \(host) within \(milliseconds) ms")
                return Asked(result: .failed(code: error.code.description, message: error.message), milliseconds: elapsed(), error: error)
            }
            return Asked(result: result(answer), milliseconds: elapsed(), error: nil)
        } catch let error as ResolutionError {
            return Asked(result: .failed(code: error.code.description, message: error.message), milliseconds: elapsed(), error: error)
        } catch {
            let error = ResolutionError(.internalError, "\(error)")
            return Asked(result: .failed(code: error.code.description, message: error.message), milliseconds: elapsed(), error: error)
        }
    }

    /// Addresses when there are any; else NXDOMAIN when either family said so; else no data.
    private static func result(_ answer: SourceAnswer) -> HealthReport.Result {
        var addresses: [IPAddress] = []
        var nameNotFound = false
        if case .addresses(let found, _)? = answer.ipv4 { addresses += found.map(IPAddress.v4) }
        if case .addresses(let found, _)? = answer.ipv6 { addresses += found.map(IPAddress.v6) }
        if case .negative(.nameNotFound, _)? = answer.ipv4 { nameNotFound = true }
        if case .negative(.nameNotFound, _)? = answer.ipv6 { nameNotFound = true }
        if !addresses.isEmpty { return .addresses(addresses) }
        return nameNotFound ? .nameNotFound : .noData
    }
}

/// Reads a service's certificate over a TLS connection verified as the clients verify it: its chain against the
/// system's roots and `--cacert`, and the server name (or the address when there is none). Verification is never
/// turned off: a certificate that does not verify is reported as rejected, with the reason, and its dates are
/// not read.
enum CertificateProbe {
    enum Outcome: Sendable {
        case accepted(daysLeft: Int?)
        case rejected(String)
        case unreachable
    }

    static func read(_ endpoint: ServiceEndpoint, settings: HealthSettings, tls: TLSConfiguration) async -> Outcome {
        let notAfter = Mutex<time_t?>(nil)
        var tls = tls
        // A server that never confirms the close must not hold the probe past its time (NIOSSL waits 5 s).
        tls.shutdownTimeout = TimeAmount(min(settings.timeout, .milliseconds(250)))
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(settings.timeout), read: TimeAmount(settings.timeout))
        )
        configuration.connectionPool.retryConnectionEstablishment = false
        let serverName = settings.service?.serverName
        if let serverName { configuration.dnsOverride = [serverName: endpoint.address.description] }
        let capture: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
            let certificate = try? channel.pipeline.syncOperations.handler(type: NIOSSLHandler.self).peerCertificate
            notAfter.withLock { $0 = certificate?.notValidAfter }
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        configuration.http1_1ConnectionDebugInitializer = capture
        configuration.http2ConnectionDebugInitializer = capture
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let host = serverName ?? endpoint.urlHost
        let url = "https://\(host):\(endpoint.port)\(endpoint.path)/healthz"
        let outcome: Outcome
        do {
            // The head is the answer: the body is not read, so a slow one cannot hold the probe.
            _ = try await client.execute(HTTPClientRequest(url: url), timeout: TimeAmount(settings.timeout))
            outcome = .accepted(daysLeft: daysLeft(notAfter.withLock { $0 }.map { Int($0) }))
        } catch {
            outcome = CertificateRejection.reason(error).map(Outcome.rejected) ?? .unreachable
        }
        try? await client.shutdown()
        return outcome
    }

    /// Whole days from now until `notAfter` (seconds since 1970), when it is known.
    static func daysLeft(_ notAfter: Int?) -> Int? {
        notAfter.map { Int(((Double($0) - Date().timeIntervalSince1970) / 86_400).rounded(.down)) }
    }
}
