import Foundation
import Glibc
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// Faults around `httpdns serve`, with real processes: its upstream (dnsmasq) stopped and started again, and the
/// service itself killed while clients wait on it. docs/RELIABILITY.md, "Faults", has the whole table.
@Suite("Faults around httpdns serve", .timeLimit(.minutes(2)))
struct ServiceFaultTests {
    /// While the upstream is down, a name the service has cached is still answered and a new one fails with an
    /// error that says the upstream failed; once it is back on the same address, the service asks it again, with
    /// no restart of its own.
    @Test func anUpstreamRestartedIsAskedAgain() async throws {
        var dns = try await DNSMasqServer.start(records: ServiceTestRecords.lines)
        defer { dns.stop() }
        try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
            let server = try await ServiceProcess.start(["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key])
            defer { server.stop() }
            let source = try NativeServiceSourceTests.source(["https://127.0.0.1:\(server.port)"], cacert: certificate)
            try await NativeServiceSourceTests.using(source) { source in
                let serve = try HostName("serve.test")
                let other = try HostName("other.test")
                #expect(NativeServiceSourceTests.addresses(try await source.query(serve, families: .ipv4).ipv4) == [IPv4Address("127.0.0.1")!])

                dns.stop()
                let failure = await #expect(throws: ResolutionError.self) { try await source.query(other, families: .ipv4) }
                #expect(failure?.code == .serverFailure, "\(failure.map { "\($0)" } ?? "no error")")
                // Cached by the service before the upstream went: still answered.
                #expect(NativeServiceSourceTests.addresses(try await source.query(serve, families: .ipv4).ipv4) == [IPv4Address("127.0.0.1")!])

                dns = try await DNSMasqServer.start(records: ServiceTestRecords.lines, at: dns.address)
                #expect(NativeServiceSourceTests.addresses(try await source.query(other, families: .ipv4).ipv4) == [IPv4Address("127.0.0.2")!])
            }
            #expect(server.stop() == .exited(0))
        }
    }

    /// Two services, each with a dnsmasq of its own that hands every name under `slow.test` to an upstream that
    /// never answers. Lookups of such names go to the first service, and once its dnsmasq has them all, that service
    /// is killed (SIGKILL, no goodbye). Every lookup still ends, with a typed error and none hanging: the client sees
    /// the connection die and asks the second service (its dnsmasq sees every name), which has no answer either.
    /// Names the second service can answer are answered from then on.
    @Test func aServiceKilledWithRequestsInFlight() async throws {
        let silent = try SilentUDPSocket()
        defer { silent.close() }
        let records = ServiceTestRecords.lines + ["server=/slow.test/127.0.0.1#\(silent.port)"]
        try await withDNSMasq(records: records) { firstDNS in
            try await withDNSMasq(records: records) { secondDNS in
                try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
                    // Long enough upstream waits that the lookups are still in flight when the first service dies.
                    let environment = ["HTTPDNS_UPSTREAM_TIMEOUT_MS": "3000", "HTTPDNS_UPSTREAM_TRIES": "1", "HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                    func start(_ dns: DNSMasqServer) async throws -> ServiceProcess {
                        try await ServiceProcess.start(
                            ["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key],
                            environment: environment
                        )
                    }
                    let first = try await start(firstDNS)
                    defer { first.stop() }
                    let second = try await start(secondDNS)
                    defer { second.stop() }
                    // Neither address has been measured yet, so the client asks them in the order given.
                    let source = try NativeServiceSourceTests.source(
                        ["https://127.0.0.1:\(first.port)", "https://127.0.0.1:\(second.port)"],
                        cacert: certificate
                    )
                    try await NativeServiceSourceTests.using(source) { source in
                        let cache = try ResolverCache(source: source)
                        let names = try (0..<8).map { try HostName("n\($0).slow.test") }
                        let outcomes = try await withThrowingTaskGroup(of: (HostName, Result<Resolution, ResolutionError>).self) { group in
                            for name in names {
                                group.addTask {
                                    do { return (name, .success(try await cache.resolve(name, families: .ipv4))) } catch let error as ResolutionError {
                                        return (name, .failure(error))
                                    }
                                }
                            }
                            // dnsmasq logs a query before it forwards it: once all eight are in the first one's log,
                            // they are in flight at the first service.
                            try await Self.waitUntil("the first service's dnsmasq has the eight slow queries") {
                                try names.allSatisfy { try firstDNS.queryCount($0.value, type: "A") >= 1 }
                            }
                            #expect(first.process.stop(signal: SIGKILL) == .signaled(SIGKILL))
                            return try await group.reduce(into: []) { $0.append($1) }
                        }

                        #expect(outcomes.count == names.count)
                        for (name, outcome) in outcomes {
                            guard case .failure(let error) = outcome else {
                                Issue.record("\(name), which nobody can answer, was answered: \(outcome)")
                                continue
                            }
                            // When every address fails, the first one's failure is the one thrown: the connection died.
                            #expect(error.code == .serverUnreachable, "\(name): \(error)")
                            #expect(error.message.contains("127.0.0.1:\(first.port)"), "\(name): \(error)")
                            // The client went on to the second service with it.
                            #expect(try secondDNS.queryCount(name.value, type: "A") >= 1, "\(name): \(error)")
                        }
                        // The second service answers what it can.
                        #expect(try await cache.resolve(try HostName("other.test"), families: .ipv4).ipv4 == [IPv4Address("127.0.0.2")!])
                        #expect(try await cache.resolve(try HostName("serve.test"), families: .ipv4).ipv4 == [IPv4Address("127.0.0.1")!])
                    }
                    #expect(second.stop() == .exited(0))
                }
            }
        }
    }

    /// Polls `condition` every 20 ms for at most 10 s: for states that only a log file shows.
    static func waitUntil(_ what: String, _ condition: () throws -> Bool) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while try !condition() {
            try #require(clock.now < deadline, "waited 10 s, and still not: \(what)")
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// A UDP socket on 127.0.0.1 that never reads what it is sent: an upstream that swallows queries.
struct SilentUDPSocket {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw PeerStartError(description: "socket: \(String(cString: strerror(errno)))", retryable: false) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw PeerStartError(description: "bind 127.0.0.1: \(reason)", retryable: false)
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    func close() { _ = Glibc.close(descriptor) }
}
