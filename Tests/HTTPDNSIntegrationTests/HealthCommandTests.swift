import Foundation
import HTTPDNSTesting
import Testing

/// `httpdns health`: the built binary against `httpdns serve` over TLS (certificates made for the test) with an
/// honest dnsmasq behind it, that same dnsmasq as an honest local resolver, and a lying dnsmasq as a hijacked one.
@Suite("httpdns health", .timeLimit(.minutes(3)))
struct HealthCommandTests {
    static let honest = ["host-record=bank.test,127.0.0.5,300", "host-record=shop.test,127.0.0.6,300", "local=/test/"]
    /// A private address for bank.test (H3), another public-looking one for shop.test (H2: 192.0.2.0/24 is not among
    /// the private ranges), and an address for a name that does not exist (H1).
    static let lies = ["address=/bank.test/10.0.0.66", "address=/shop.test/192.0.2.77", "address=/gone.test/192.0.2.99"]

    struct Scenario {
        let url: String
        let certificate: String
        let honest: DNSMasqServer
        let liar: DNSMasqServer
    }

    func withScenario(certificateDays: Int = 30, subjectAltName: String = "IP:127.0.0.1,DNS:dns.test", _ body: (Scenario) async throws -> Void) async throws {
        try await withDNSMasq(records: Self.honest) { upstream in
            try await withDNSMasq(records: Self.lies) { liar in
                try await TestCertificate.with(subjectAltName: subjectAltName, days: certificateDays) { certificate, key in
                    let service = try await ServiceProcess.start(
                        ["--upstream", upstream.address.description, "--tls-cert", certificate, "--tls-key", key],
                        environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                    )
                    defer { service.stop() }
                    try await body(Scenario(url: "https://127.0.0.1:\(service.port)", certificate: certificate, honest: upstream, liar: liar))
                }
            }
        }
    }

    /// `httpdns health ARGUMENTS`, without any `HTTPDNS_…` variable of the test's own. Each probe has 10 s unless
    /// the arguments say otherwise: the default 2 s is for a quiet machine, and the suite's other processes share
    /// this one. (The tests of what never answers set `--timeout-ms` of their own.)
    func health(_ arguments: [String]) async throws -> ChildProcess.Completion {
        let patience = arguments.contains { $0 == "--timeout-ms" || $0.hasPrefix("--timeout-ms=") } ? [] : ["--timeout-ms", "10000"]
        return try await ServiceProcess.runCommand("health", arguments + patience)
    }

    func object(_ completion: ChildProcess.Completion) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(completion.stdout.utf8))
        return try #require(value as? [String: Any], "stdout is not a JSON object: \(completion)")
    }

    func hosts(_ report: [String: Any]) -> [String: [String: Any]] {
        let hosts = report["hosts"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: hosts.map { ($0["host"] as? String ?? "", $0) })
    }

    @Test func anHonestNetworkIsHealthy() async throws {
        try await withScenario { scenario in
            let arguments = [
                "--server", scenario.url, "--cacert", scenario.certificate, "--dns", scenario.honest.address.description,
                "--host", "bank.test", "--host", "shop.test", "--host", "gone.test",
                // Loopback answers stand in for public ones here.
                "--allow-private", ".test",
            ]
            let run = try await health(arguments + ["--json"])
            #expect(run.status == .exited(0), "\(run)")
            let report = try object(run)
            #expect(report["status"] as? String == "healthy")
            let service = try #require((report["services"] as? [[String: Any]])?.first)
            #expect(service["url"] as? String == scenario.url)
            #expect(service["reachable"] as? Bool == true)
            #expect((service["latencyMs"] as? Double ?? -1) >= 0)
            let certificate = try #require(service["certificate"] as? [String: Any])
            #expect(certificate["valid"] as? Bool == true)
            // Made for 30 days a moment ago: 29 whole days are left.
            #expect(certificate["daysLeft"] as? Int == 29, "\(certificate)")
            let server = try #require((report["dnsServers"] as? [[String: Any]])?.first)
            #expect(server["reachable"] as? Bool == true)
            let bank = try #require(hosts(report)["bank.test"])
            #expect(bank["agree"] as? Bool == true)
            #expect((bank["answers"] as? [[String: Any]])?.map { $0["addresses"] as? [String] } == [["127.0.0.5"], ["127.0.0.5"]])
            #expect(bank["verdict"] as? [String: String] == ["level": "ok", "reason": "none"])
            let gone = try #require(hosts(report)["gone.test"])
            #expect((gone["answers"] as? [[String: Any]])?.map { $0["result"] as? String } == ["nxdomain", "nxdomain"])

            // The same facts for people: a table, then the summary; no colour when stdout is not a terminal.
            let text = try await health(arguments)
            #expect(text.status == .exited(0), "\(text)")
            #expect(text.stdout.contains("SERVICE"), "\(text)")
            #expect(text.stdout.contains("valid, 29 days left"), "\(text)")
            #expect(text.stdout.contains("bank.test  127.0.0.5"), "\(text)")
            #expect(text.stdout.split(separator: "\n").last?.hasPrefix("healthy: 1 service, 1 DNS server, 3 probe names") == true, "\(text)")
            #expect(!text.stdout.contains("\u{1B}["), "no escape codes off a terminal")
        }
    }

    /// H1–H3 through a lying local resolver: each answer side by side with the service's, and the verdict with its
    /// reason. Exit 1.
    @Test func aLyingResolverIsCalledOutNameByName() async throws {
        try await withScenario { scenario in
            let run = try await health([
                "--server", scenario.url, "--cacert", scenario.certificate, "--dns", scenario.liar.address.description,
                "--host", "bank.test", "--host", "shop.test", "--host", "gone.test", "--json",
            ])
            #expect(run.status == .exited(1), "\(run)")
            let report = try object(run)
            #expect(report["status"] as? String == "degraded")
            let byHost = hosts(report)
            let liar = scenario.liar.address.description
            #expect(byHost["bank.test"]?["verdict"] as? [String: String] == ["level": "hijacked", "reason": "private-answer", "source": liar])
            #expect(byHost["shop.test"]?["verdict"] as? [String: String] == ["level": "suspect", "reason": "address-swap", "source": liar])
            #expect(byHost["gone.test"]?["verdict"] as? [String: String] == ["level": "hijacked", "reason": "nxdomain-rewrite", "source": liar])
            #expect(byHost.values.allSatisfy { $0["agree"] as? Bool == false })
            let shop = try #require(byHost["shop.test"]?["answers"] as? [[String: Any]])
            #expect(shop.map { $0["addresses"] as? [String] } == [["127.0.0.6"], ["192.0.2.77"]])
            #expect(shop.map { $0["trusted"] as? Bool } == [true, false])
            let reasons = report["reasons"] as? [String] ?? []
            #expect(reasons.contains { $0.contains("gone.test") && $0.contains("nxdomain-rewrite") }, "\(reasons)")
        }
    }

    @Test func aCertificateTheClientsWouldRefuseIsReported() async throws {
        try await withScenario { scenario in
            // Without the CA the certificate does not verify: the service answered the handshake, so it is
            // reachable, but not to be trusted.
            let untrusted = try await health([
                "--server", scenario.url, "--dns", scenario.honest.address.description, "--host", "bank.test", "--allow-private", ".test", "--json",
            ])
            #expect(untrusted.status == .exited(1), "\(untrusted)")
            let service = try #require((try object(untrusted)["services"] as? [[String: Any]])?.first)
            #expect(service["reachable"] as? Bool == true)
            let certificate = try #require(service["certificate"] as? [String: Any])
            #expect(certificate["valid"] as? Bool == false)
            #expect((certificate["problem"] as? String)?.contains("did not verify") == true, "\(certificate)")
        }
    }

    /// A certificate for a name, not the address: it is checked against `--server-name`, as the clients check it.
    @Test func theCertificateMustHoldTheServerName() async throws {
        try await withScenario(subjectAltName: "DNS:dns.test") { scenario in
            let base = [
                "--server", scenario.url, "--cacert", scenario.certificate, "--dns", scenario.honest.address.description, "--host", "bank.test",
                "--allow-private", ".test", "--json",
            ]
            let named = try await health(base + ["--server-name", "dns.test"])
            #expect(named.status == .exited(0), "\(named)")
            let misnamed = try await health(base + ["--server-name", "other.test"])
            #expect(misnamed.status == .exited(1), "\(misnamed)")
            let certificate = try #require((try object(misnamed)["services"] as? [[String: Any]])?.first?["certificate"] as? [String: Any])
            #expect(certificate["valid"] as? Bool == false, "\(certificate)")
            #expect((certificate["problem"] as? String)?.contains("neither the name nor the address") == true, "\(certificate)")
        }
    }

    /// Each DNS server's answer has a verdict of its own: with an honest and a lying server, the lie is named, and the
    /// honest answer is ok.
    @Test func eachDNSServersAnswerIsJudgedOnItsOwn() async throws {
        try await withScenario { scenario in
            let run = try await health([
                "--server", scenario.url, "--cacert", scenario.certificate, "--dns", scenario.honest.address.description,
                "--dns", scenario.liar.address.description, "--host", "shop.test", "--allow-private", ".test", "--json",
            ])
            #expect(run.status == .exited(1), "\(run)")
            let shop = try #require(hosts(try object(run))["shop.test"])
            let verdicts = (shop["answers"] as? [[String: Any]])?.map { $0["verdict"] as? [String: String] }
            #expect(verdicts == [nil, ["level": "ok", "reason": "none"], ["level": "suspect", "reason": "address-swap"]], "\(shop)")
            #expect((shop["verdict"] as? [String: String])?["source"] == scenario.liar.address.description)
        }
    }

    /// A key that is none of the pins: the service answered, so it is reachable, and its certificate is not accepted.
    @Test func aPinMismatchIsACertificateNotAcceptedNotAnUnreachableService() async throws {
        try await withScenario { scenario in
            let run = try await health([
                "--server", scenario.url, "--cacert", scenario.certificate, "--pin", "sha256//\(String(repeating: "A", count: 43))=",
                "--dns", scenario.honest.address.description, "--host", "bank.test", "--allow-private", ".test", "--json",
            ])
            #expect(run.status == .exited(1), "\(run)")
            let service = try #require((try object(run)["services"] as? [[String: Any]])?.first)
            #expect(service["reachable"] as? Bool == true, "\(service)")
            let certificate = try #require(service["certificate"] as? [String: Any])
            #expect(certificate["valid"] as? Bool == false)
            #expect((certificate["problem"] as? String)?.contains("pins") == true, "\(certificate)")
        }
    }

    @Test func aCertificateCloseToExpiryDegrades() async throws {
        try await withScenario(certificateDays: 1) { scenario in
            let base = ["--server", scenario.url, "--cacert", scenario.certificate, "--dns", scenario.honest.address.description, "--host", "bank.test"]
            let run = try await health(base + ["--allow-private", ".test", "--json"])
            #expect(run.status == .exited(1), "\(run)")
            let report = try object(run)
            #expect((report["reasons"] as? [String])?.contains { $0.contains("expires in 0 days") } == true, "\(report)")
            // A warning threshold of one day: still within it, since less than a whole day is left.
            let lenient = try await health(base + ["--allow-private", ".test", "--warn-days", "1"])
            #expect(lenient.status == .exited(1), "\(lenient)")
        }
    }

    @Test func nothingReachableExitsThree() async throws {
        let closed = try ClosedTCPPort()
        let run = try await health([
            "--server", "https://127.0.0.1:\(closed.port)", "--dns", "127.0.0.1:\(closed.port)", "--host", "bank.test",
            "--timeout-ms", "500", "--json",
        ])
        #expect(run.status == .exited(3), "\(run)")
        let report = try object(run)
        #expect(report["status"] as? String == "unreachable")
        #expect((report["services"] as? [[String: Any]])?.first?["reachable"] as? Bool == false)
        #expect((report["dnsServers"] as? [[String: Any]])?.first?["reachable"] as? Bool == false)
    }

    /// The probes run at once: two DNS servers that never answer, asked for three names each, take about as long
    /// as one probe, not six. (c-ares's timeout per try is a third of the probe's, and a TCP server that accepts and
    /// never answers gets one try: about 333 ms a probe, 2000 ms for six in turn. The bound is three times one
    /// probe's, so that a loaded machine does not fail it.)
    @Test func theProbesRunAtOnce() async throws {
        let first = try SilentTCPListener()
        let second = try SilentTCPListener()
        let run = try await health([
            "--dns", "127.0.0.1:\(first.port)", "--dns", "127.0.0.1:\(second.port)", "--tcp",
            "--host", "a.test", "--host", "b.test", "--host", "c.test", "--timeout-ms", "1000", "--json",
        ])
        #expect(run.status == .exited(3), "\(run)")
        let report = try object(run)
        let duration = try #require(report["durationMs"] as? Double)
        #expect(duration >= 300, "each probe waited for its timeout: \(duration) ms")
        #expect(duration < 1000, "six probes of about 333 ms each took \(duration) ms: they did not run at once")
    }

    @Test(arguments: [
        (["--server", "https://dns.example/"], "is not an IP address"),
        (["--dns", "127.0.0.1:5353", "--host", "a_b.test"], "host name"),
        (["--dns", "127.0.0.1:5353", "--timeout-ms", "0"], "positive"),
        (["--dns", "127.0.0.1:5353", "--cacert", "/nonexistent.pem"], "describe a service"),
        (["--dns", "127.0.0.1:5353", "--watch", "x"], "positive"),
    ])
    func badInputExitsTwoSayingWhy(_ arguments: [String], _ expected: String) async throws {
        let run = try await health(arguments)
        #expect(run.status == .exited(2), "\(run)")
        #expect(run.stderr.contains(expected), "\(run)")
    }

    /// `--watch` repeats the checks and prints what changed: here the DNS server going away.
    @Test func watchShowsWhatChanged() async throws {
        let dns = try await DNSMasqServer.start(records: Self.honest)
        defer { dns.stop() }
        let executable = try ServiceProcess.executablePath()
        // Its output on stderr, where the test can wait for a line.
        let process = try ChildProcess(
            executable: "/bin/sh",
            arguments: [
                "-c", "exec \"$0\" health --dns \"$1\" --host bank.test --allow-private .test --watch 1 --timeout-ms 500 1>&2",
                executable, dns.address.description,
            ]
        )
        defer { process.stop() }
        let first = await process.waitForStderr(containing: "healthy: 0 services, 1 DNS server")
        #expect(first.found, "\(first.output)")
        dns.stop()
        let changed = await process.waitForStderr(containing: "\(dns.address): reachable → unreachable")
        #expect(changed.found, "\(changed.output)")
        #expect(changed.output.contains("status: healthy → unreachable"), "\(changed.output)")
    }
}
