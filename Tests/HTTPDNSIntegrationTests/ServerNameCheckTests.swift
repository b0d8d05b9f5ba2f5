import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// A configured server name is the only name accepted. The service's certificate holds `IP:127.0.0.1` and the name
/// `dns.test` only: NIOSSL alone would take it for any server name asked of 127.0.0.1 (the IP SAN matches the
/// address connected to). With `serverName` `wrong.test`, every client of the service refuses it, saying the
/// certificate does not hold the name; with `dns.test` it is accepted; with none, the IP SAN is what is checked.
@Suite("A configured server name is really checked", .timeLimit(.minutes(2)))
struct ServerNameCheckTests {
    enum Client: String, CaseIterable, Sendable {
        case native, doh, json
    }

    static func source(_ client: Client, url: String, cacert: String, serverName: String?) throws -> any ResolutionSource {
        var connection = ServiceConnection(servers: [try ServiceEndpoint(parsing: url)])
        connection.extraTrustRootsPEMFile = cacert
        connection.serverName = serverName
        connection.budget = .seconds(10)
        connection.attemptTimeout = .seconds(10)
        switch client {
        case .native: return try NativeServiceSource(configuration: .init(connection: connection))
        case .doh: return try DoHSource(configuration: .init(connection: connection))
        case .json: return try JSONDNSSource(configuration: .init(connection: connection))
        }
    }

    /// The outcome of one lookup of serve.test, the source shut down afterwards.
    static func lookUp(_ client: Client, url: String, cacert: String, serverName: String?) async throws -> Result<SourceAnswer, ResolutionError> {
        let source = try source(client, url: url, cacert: cacert, serverName: serverName)
        let outcome: Result<SourceAnswer, ResolutionError>
        do {
            outcome = .success(try await source.query(try HostName("serve.test"), families: .ipv4))
        } catch let error as ResolutionError {
            outcome = .failure(error)
        }
        await source.shutdown()
        return outcome
    }

    @Test(arguments: Client.allCases)
    func everyClientOfTheServiceChecksTheName(_ client: Client) async throws {
        try await NativeServiceSourceTests.withService("IP:127.0.0.1,DNS:dns.test") { url, certificate in
            switch try await Self.lookUp(client, url: url, cacert: certificate, serverName: "wrong.test") {
            case .success(let answer):
                Issue.record("\(client): a certificate without wrong.test was accepted: \(answer)")
            case .failure(let error):
                #expect(error.code == .certificateRejected, "\(client): \(error)")
                #expect(error.message.contains("does not hold wrong.test as a DNS name"), "\(client): \(error)")
                #expect(error.message.contains("127.0.0.1"), "\(client): the address is named: \(error)")
            }
            for serverName in ["dns.test", nil] {
                if case .failure(let error) = try await Self.lookUp(client, url: url, cacert: certificate, serverName: serverName) {
                    Issue.record("\(client) with server name \(serverName ?? "none"): \(error)")
                }
            }
        }
    }

    /// The command line, as the issue found it: `httpdns resolve --server-name wrong.example` fails, exit 3, saying
    /// why; the right name passes.
    @Test func resolveRefusesTheWrongServerName() async throws {
        try await NativeServiceSourceTests.withService("IP:127.0.0.1,DNS:dns.test") { url, certificate in
            let base = ["serve.test", "--source", "httpdns", "--server", url, "--cacert", certificate, "--budget-ms", "10000", "--attempt-timeout-ms", "10000"]
            let wrong = try await ServiceProcess.runCommand("resolve", base + ["--server-name", "wrong.example"], environment: [:])
            #expect(wrong.status == .exited(3), "\(wrong)")
            #expect(wrong.stderr.contains("does not hold wrong.example as a DNS name"), "\(wrong)")
            let right = try await ServiceProcess.runCommand("resolve", base + ["--server-name", "dns.test"], environment: [:])
            #expect(right.status == .exited(0), "\(right)")
        }
    }
}
