import Foundation
import HTTPDNSTesting
import Testing

/// `httpdns resolve` asking an HTTPDNS service: the built binary against `httpdns serve` over TLS (certificates made
/// for the test) with an honest dnsmasq behind it, and a lying dnsmasq as the local resolver.
@Suite("httpdns resolve through an HTTPDNS service", .timeLimit(.minutes(2)))
struct ResolveServiceCommandTests {
    static let honest = ["host-record=bank.test,127.0.0.5,300", "host-record=shop.test,127.0.0.6,300", "local=/invalid/"]
    /// A private address for bank.test (H3); a public-looking one for shop.test (a fallback answer the guard lets
    /// through: 192.0.2.0/24 is not among the private ranges).
    static let lies = ["address=/bank.test/10.0.0.66", "address=/shop.test/192.0.2.77"]

    struct Scenario {
        let url: String
        let certificate: String
        let liar: DNSMasqServer
        let service: ServiceProcess
    }

    func withScenario(_ body: (Scenario) async throws -> Void) async throws {
        try await withDNSMasq(records: Self.honest) { upstream in
            try await withDNSMasq(records: Self.lies) { liar in
                try await TestCertificate.with(subjectAltName: "IP:127.0.0.1,DNS:dns.test") { certificate, key in
                    let service = try await ServiceProcess.start(
                        ["--upstream", upstream.address.description, "--tls-cert", certificate, "--tls-key", key],
                        environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                    )
                    defer { service.stop() }
                    try await body(Scenario(url: "https://127.0.0.1:\(service.port)", certificate: certificate, liar: liar, service: service))
                }
            }
        }
    }

    /// For the runs that must reach the service: 10 s for it, where the defaults give one address 1 s, which a
    /// loaded machine running the suite's other processes has taken.
    static let patient = ["--budget-ms", "10000", "--attempt-timeout-ms", "10000"]

    /// Runs `httpdns resolve ARGUMENTS` with `environment` added to the test's own, less any `HTTPDNS_…` variable of
    /// the test's (a developer's own settings must not change what is asked, or where).
    func resolve(_ arguments: [String], environment: [String: String] = [:]) async throws -> ChildProcess.Completion {
        try await ServiceProcess.runCommand("resolve", arguments, environment: environment)
    }

    func object(_ completion: ChildProcess.Completion) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(completion.stdout.utf8))
        return try #require(value as? [String: Any], "stdout is not a JSON object: \(completion)")
    }

    @Test(arguments: ["httpdns", "doh"])
    func aServiceSourceAnswersVerifyingTheCertificate(_ source: String) async throws {
        try await withScenario { scenario in
            let run = try await resolve(
                ["bank.test", "--source", source, "--server", scenario.url, "--cacert", scenario.certificate, "--type", "a", "--json"] + Self.patient
            )
            #expect(run.status == .exited(0), "\(run)")
            let answer = try object(run)
            #expect(answer["ipv4"] as? [String] == ["127.0.0.5"])
            #expect(answer["source"] as? String == source)
            #expect(answer["fallback"] as? Bool == false)
            #expect(answer["verdict"] as? [String: String] == ["level": "ok", "reason": "none"])
            // Without the CA the certificate is not trusted: exit 3, saying so.
            let untrusted = try await resolve(["bank.test", "--source", source, "--server", scenario.url] + Self.patient)
            #expect(untrusted.status == .exited(3), "\(untrusted)")
            #expect(untrusted.stderr.contains("certificate"), "\(untrusted)")
        }
    }

    /// `auto` with the service up: its answer, and the lying local resolver is never asked.
    @Test func autoTakesTheServicesAnswer() async throws {
        try await withScenario { scenario in
            let arguments = [
                "bank.test", "--source", "auto", "--server", scenario.url, "--cacert", scenario.certificate, "--fallback", "cares",
                "--dns", scenario.liar.address.description, "--type", "A",
            ]
            let run = try await resolve(arguments + Self.patient)
            #expect(run.status == .exited(0), "\(run)")
            #expect(run.stdout.hasPrefix("bank.test\tA\t127.0.0.5\n"), "\(run)")
            #expect(run.stdout.contains("source httpdns,"), "\(run)")
            #expect(try scenario.liar.queryCount("bank.test", type: "A") == 0)
        }
    }

    /// `auto` with the service down: the local answer is taken when the guard lets it through (marked fallback), and
    /// a private answer for a public name, the only answer there is, exits 1 with the reason (H3).
    @Test func autoWithTheServiceDownFallsBackThroughTheGuard() async throws {
        try await withScenario { scenario in
            scenario.service.stop()
            // No system resolver: getaddrinfo would ask the machine's own DNS server, off loopback.
            let common = [
                "--source", "auto", "--server", scenario.url, "--cacert", scenario.certificate, "--fallback", "cares",
                "--dns", scenario.liar.address.description, "--type", "A", "--json",
            ]
            let shop = try await resolve(["shop.test"] + common)
            #expect(shop.status == .exited(0), "\(shop)")
            let answer = try object(shop)
            #expect(answer["ipv4"] as? [String] == ["192.0.2.77"])
            #expect(answer["source"] as? String == "cares")
            #expect(answer["fallback"] as? Bool == true)
            #expect(answer["verdict"] as? [String: String] == ["level": "ok", "reason": "none"])

            let bank = try await resolve(["bank.test"] + common)
            #expect(bank.status == .exited(1), "\(bank)")
            #expect(bank.stderr.contains("private-answer"), "\(bank)")
            let refused = try object(bank)
            #expect(refused["verdict"] as? [String: String] == ["level": "hijacked", "reason": "private-answer"])
            #expect((refused["error"] as? [String: String])?["code"] == "rejectedByGuard")
            #expect(refused["ipv4"] as? [String] == [])
        }
    }

    /// Every flag is also an `HTTPDNS_…` variable and a key of the `--config` file; flags win over variables, which
    /// win over the file.
    @Test func settingsComeFromTheFileTheEnvironmentAndFlags() async throws {
        try await withScenario { scenario in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-resolve-\(UUID().uuidString).json").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            let settings =
                #"{"source": "doh", "servers": ["\#(scenario.url)"], "cacert": "\#(scenario.certificate)", "type": "A", "json": true, "#
                + #""budgetMs": 10000, "attemptTimeoutMs": 10000}"#
            try settings.write(toFile: file, atomically: true, encoding: .utf8)
            let fromFile = try await resolve(["bank.test", "--config", file])
            #expect(fromFile.status == .exited(0), "\(fromFile)")
            #expect(try object(fromFile)["source"] as? String == "doh")

            let fromEnvironment = try await resolve(["bank.test"], environment: ["HTTPDNS_CONFIG": file, "HTTPDNS_SOURCE": "httpdns"])
            #expect(fromEnvironment.status == .exited(0), "\(fromEnvironment)")
            #expect(try object(fromEnvironment)["source"] as? String == "httpdns")

            let fromFlag = try await resolve(["bank.test", "--source", "doh"], environment: ["HTTPDNS_CONFIG": file, "HTTPDNS_SOURCE": "httpdns"])
            #expect(fromFlag.status == .exited(0), "\(fromFlag)")
            #expect(try object(fromFlag)["source"] as? String == "doh", "\(fromFlag)")

            let badVariable = try await resolve(["bank.test"], environment: ["HTTPDNS_CONFIG": file, "HTTPDNS_PINS": "sha256//short"])
            #expect(badVariable.status == .exited(2), "\(badVariable)")
            #expect(badVariable.stderr.contains("HTTPDNS_PINS"), "\(badVariable)")
        }
    }

    struct BadInput: CustomTestStringConvertible, Sendable {
        let label: String
        let arguments: [String]
        let fragment: String
        var testDescription: String { label }
    }

    static let badInputs = [
        BadInput(label: "doh without a server", arguments: ["--source", "doh"], fragment: "--source doh asks an HTTPDNS service"),
        BadInput(label: "a server for c-ares", arguments: ["--server", "https://127.0.0.1:8443"], fragment: "apply to --source auto, httpdns, doh or dot"),
        BadInput(label: "a server by name", arguments: ["--source", "doh", "--server", "https://dns.example:443"], fragment: "--server holds a service URL that cannot be used"),
        BadInput(label: "a short pin", arguments: ["--source", "doh", "--server", "https://127.0.0.1", "--pin", "sha256//abc"], fragment: "is not an SPKI SHA-256 pin"),
        BadInput(label: "a pin over plain HTTP", arguments: ["--source", "doh", "--server", "http://127.0.0.1", "--pin", "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="], fragment: "pins need HTTPS"),
        BadInput(label: "a CA file that is no PEM", arguments: ["--source", "doh", "--server", "https://127.0.0.1", "--cacert", "/etc/hostname"], fragment: "is not a PEM certificate file"),
        BadInput(label: "a fallback for c-ares alone", arguments: ["--fallback", "system"], fragment: "--fallback applies to --source auto"),
        BadInput(label: "an unknown fallback", arguments: ["--source", "auto", "--server", "https://127.0.0.1", "--fallback", "dot"], fragment: "must be a list of cares or system, not 'dot'"),
        BadInput(
            label: "an attempt longer than the budget",
            arguments: ["--source", "doh", "--server", "https://127.0.0.1", "--attempt-timeout-ms", "5000"],
            fragment: "must be at most the budget, --budget-ms (2000 ms), not 5000"
        ),
        BadInput(label: "an unknown source", arguments: ["--source", "doq"], fragment: "--source must be auto, httpdns, doh, dot, cares or system, not 'doq'"),
    ]

    @Test("Bad input ends with exit 2 and says what is wrong", arguments: badInputs)
    func badInput(_ input: BadInput) async throws {
        let run = try await resolve(["bank.test"] + input.arguments)
        #expect(run.status == .exited(2), "\(run)")
        #expect(run.stderr.contains(input.fragment), "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }
}
