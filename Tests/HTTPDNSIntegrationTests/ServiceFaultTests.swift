import Foundation
import Glibc
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import HTTPDNSWire
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
                #expect(failure?.message.contains("answered 503") == true && failure?.message.contains("UpstreamUnavailable") == true, "\(failure.map { "\($0)" } ?? "no error")")
                // Cached by the service before the upstream went: still answered.
                #expect(NativeServiceSourceTests.addresses(try await source.query(serve, families: .ipv4).ipv4) == [IPv4Address("127.0.0.1")!])

                dns = try await DNSMasqServer.start(records: ServiceTestRecords.lines, at: dns.address)
                #expect(NativeServiceSourceTests.addresses(try await source.query(other, families: .ipv4).ipv4) == [IPv4Address("127.0.0.2")!])
            }
            #expect(server.stop() == .exited(0))
        }
    }

    /// Two services, each with a dnsmasq of its own that hands every name under `slow.test` to an upstream that
    /// never answers (a socket of the test's). Lookups of such names go to the first service, and once its silent
    /// upstream has them all, that service is killed (SIGKILL, no goodbye). Every lookup still ends, with a typed
    /// error and none hanging: the client sees the connection die and asks the second service (whose silent upstream
    /// then gets every name), which has no answer either. Names the second service can answer are answered from then
    /// on.
    @Test func aServiceKilledWithRequestsInFlight() async throws {
        let firstSilent = try SilentUDPSocket()
        defer { firstSilent.close() }
        let secondSilent = try SilentUDPSocket()
        defer { secondSilent.close() }
        try await withDNSMasq(records: ServiceTestRecords.lines + ["server=/slow.test/127.0.0.1#\(firstSilent.port)"]) { firstDNS in
            try await withDNSMasq(records: ServiceTestRecords.lines + ["server=/slow.test/127.0.0.1#\(secondSilent.port)"]) { secondDNS in
                try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
                    // The first service waits on its upstream far longer than the test takes, so the lookups are
                    // still in flight there when it dies; the second gives up after 3 s, so they end.
                    func start(_ dns: DNSMasqServer, upstreamTimeoutMs: Int) async throws -> ServiceProcess {
                        try await ServiceProcess.start(
                            ["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key],
                            environment: [
                                "HTTPDNS_UPSTREAM_TIMEOUT_MS": "\(upstreamTimeoutMs)", "HTTPDNS_UPSTREAM_TRIES": "1", "HTTPDNS_RATE_LIMIT_PER_SECOND": "0",
                            ]
                        )
                    }
                    let first = try await start(firstDNS, upstreamTimeoutMs: 60_000)
                    defer { first.stop() }
                    let second = try await start(secondDNS, upstreamTimeoutMs: 3_000)
                    defer { second.stop() }
                    // Neither address has been measured yet, so the client asks them in the order given.
                    let source = try NativeServiceSourceTests.source(
                        ["https://127.0.0.1:\(first.port)", "https://127.0.0.1:\(second.port)"],
                        cacert: certificate
                    )
                    try await NativeServiceSourceTests.using(source) { source in
                        let cache = try ResolverCache(source: source)
                        let names = try (0..<8).map { try HostName("n\($0).slow.test") }
                        let expected = Set(names.map(\.value))
                        let outcomes = try await withThrowingTaskGroup(of: (HostName, Result<Resolution, ResolutionError>).self) { group in
                            for name in names {
                                group.addTask {
                                    do { return (name, .success(try await cache.resolve(name, families: .ipv4))) } catch let error as ResolutionError {
                                        return (name, .failure(error))
                                    }
                                }
                            }
                            // Once the first service's silent upstream has all eight, they are in flight there.
                            let arrived = await firstSilent.questions(until: expected, timeoutMs: 10_000)
                            try #require(arrived.isSuperset(of: expected), "the first service's upstream got only \(arrived.sorted())")
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
                            #expect(error.message.contains("the connection closed before the answer came"), "\(name): \(error)")
                        }
                        // The client went on to the second service with every name: its upstream got them all.
                        let secondArrived = await secondSilent.questions(until: expected, timeoutMs: 10_000)
                        #expect(secondArrived.isSuperset(of: expected), "the second service's upstream got only \(secondArrived.sorted())")
                        // The second service answers what it can.
                        #expect(try await cache.resolve(try HostName("other.test"), families: .ipv4).ipv4 == [IPv4Address("127.0.0.2")!])
                        #expect(try await cache.resolve(try HostName("serve.test"), families: .ipv4).ipv4 == [IPv4Address("127.0.0.1")!])
                    }
                    #expect(second.stop() == .exited(0))
                }
            }
        }
    }
}

/// A UDP socket on 127.0.0.1 that never answers what it is sent: an upstream that swallows queries, and tells the
/// test which names it was asked.
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

    /// The question names of the queries that arrive, lower-cased, until every one of `names` has or `timeoutMs`
    /// has passed; on a thread of its own, as it blocks in poll(2).
    func questions(until names: Set<String>, timeoutMs: Int) async -> Set<String> {
        let descriptor = self.descriptor
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var seen = Set<String>()
                let deadline = ContinuousClock.now + .milliseconds(timeoutMs)
                var buffer = [UInt8](repeating: 0, count: 1500)
                while !seen.isSuperset(of: names) {
                    let left = deadline - ContinuousClock.now
                    guard left > .zero else { break }
                    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                    let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
                    guard poll(&entry, 1, milliseconds) > 0 else { continue }
                    guard entry.revents & Int16(POLLIN) != 0 else { break }  // POLLERR, POLLNVAL: nothing more will come
                    let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                    if count > 0, let query = try? DNSMessage(parsingQuery: buffer[0..<count]), let question = query.questions.first {
                        seen.insert(question.name.lowercased())
                    }
                }
                continuation.resume(returning: seen)
            }
        }
    }
}
