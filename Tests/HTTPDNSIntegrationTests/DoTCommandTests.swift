import Foundation
import HTTPDNSTesting
import Testing

/// The command line over DNS over TLS: the built `httpdns` against unbound serving DoT on 127.0.0.x with a certificate
/// made at test time for `dot.test` (a DNS name only: no IP SAN), so that `--server-name` is what makes it acceptable.
@Suite("httpdns over DNS over TLS, the built executable", .timeLimit(.minutes(3)))
struct DoTCommandTests {
    static let zone = [
        #"local-zone: "dot.test." static"#,
        #"local-data: "dot.test. 300 IN SOA ns.dot.test. hostmaster.dot.test. 1 3600 600 86400 60""#,
        #"local-data: "a.dot.test. 300 IN A 192.0.2.1""#,
        #"local-data: "a.dot.test. 300 IN AAAA 2001:db8::1""#,
    ]

    struct Fixture {
        let unbound: UnboundServer
        /// The certificate unbound serves, to trust with `--cacert`.
        let certificate: String
        let key: String
        /// Its DoT endpoint, `tls://127.0.0.x:PORT`.
        let server: String
    }

    /// unbound with DoT, its certificate valid for 30 days; `lines` go into its server section besides ``zone``.
    func withDoT(lines: [String] = [], _ body: (Fixture) async throws -> Void) async throws {
        try await TestCertificate.with(subjectAltName: "DNS:dot.test", days: 30) { certificate, key in
            try await withUnbound(lines: Self.zone + lines, tls: .init(certificate: certificate, key: key)) { unbound in
                let port = try #require(unbound.tlsPort)
                try await body(Fixture(unbound: unbound, certificate: certificate, key: key, server: "tls://\(unbound.address.ip):\(port)"))
            }
        }
    }

    /// `httpdns COMMAND ARGUMENTS`, without the test's own `HTTPDNS_…` variables.
    func httpdns(_ command: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> ChildProcess.Completion {
        try await ServiceProcess.runCommand(command, arguments, environment: environment)
    }

    func object(_ completion: ChildProcess.Completion) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(completion.stdout.utf8))
        return try #require(value as? [String: Any], "stdout is not a JSON object: \(completion)")
    }

    /// The lookups' patience: the default 2 s is for a quiet machine, and the suite's other processes share this one.
    static let patience = ["--budget-ms", "10000", "--attempt-timeout-ms", "10000"]

    // MARK: resolve

    @Test func resolveThroughDoTAnswersWithTheServersAddresses() async throws {
        try await withDoT { fixture in
            let run = try await httpdns(
                "resolve",
                ["a.dot.test", "--source", "dot", "--server", fixture.server, "--server-name", "dot.test", "--cacert", fixture.certificate, "--json"]
                    + Self.patience
            )
            #expect(run.status == .exited(0), "\(run)")
            let answer = try object(run)
            #expect(answer["ipv4"] as? [String] == ["192.0.2.1"], "\(run)")
            #expect(answer["ipv6"] as? [String] == ["2001:db8::1"], "\(run)")
            #expect(answer["source"] as? String == "dot")
            #expect(answer["verdict"] as? [String: String] == ["level": "ok", "reason": "none"], "DoT is a trusted source: no guard-only verdict")

            // The same from the variables, HTTPDNS_SERVERS holding the tls:// server.
            let environment = try await httpdns(
                "resolve",
                ["a.dot.test", "--type", "A"],
                environment: [
                    "HTTPDNS_SOURCE": "dot", "HTTPDNS_SERVERS": fixture.server, "HTTPDNS_SERVER_NAME": "dot.test", "HTTPDNS_CACERT": fixture.certificate,
                    "HTTPDNS_BUDGET_MS": "10000", "HTTPDNS_ATTEMPT_TIMEOUT_MS": "10000",
                ]
            )
            #expect(environment.status == .exited(0), "\(environment)")
            #expect(environment.stdout.contains("a.dot.test\tA\t192.0.2.1"), "\(environment)")
            #expect(environment.stdout.contains("source dot"), "\(environment)")
        }
    }

    /// A name the certificate does not hold: the certificate is not accepted, nothing falls back, exit 3 with the
    /// reason; without `--server-name`, the certificate must hold the address, which this one does not.
    @Test func aCertificateWithoutTheNameIsRefused() async throws {
        try await withDoT { fixture in
            let base = ["a.dot.test", "--source", "dot", "--server", fixture.server, "--cacert", fixture.certificate] + Self.patience
            let misnamed = try await httpdns("resolve", base + ["--server-name", "other.test", "--json"])
            #expect(misnamed.status == .exited(3), "\(misnamed)")
            #expect(misnamed.stderr.contains("the TLS certificate of \(fixture.server) for other.test was not accepted"), "\(misnamed)")
            #expect((try object(misnamed)["error"] as? [String: String])?["code"] == "certificateRejected", "\(misnamed)")
            let unnamed = try await httpdns("resolve", base)
            #expect(unnamed.status == .exited(3), "\(unnamed)")
            #expect(unnamed.stderr.contains("the TLS certificate of \(fixture.server) was not accepted"), "\(unnamed)")
            // Not trusted without --cacert either.
            let untrusted = try await httpdns("resolve", ["a.dot.test", "--source", "dot", "--server", fixture.server, "--server-name", "dot.test"] + Self.patience)
            #expect(untrusted.status == .exited(3), "\(untrusted)")
            #expect(untrusted.stderr.contains("did not verify"), "\(untrusted)")
        }
    }

    /// `auto` with a tls:// server asks it as the trusted source, and falls back as it does for a service.
    @Test func autoAsksTheTLSServerFirstAndFallsBack() async throws {
        try await withDoT { fixture in
            let fallback = ["--fallback", "cares", "--dns", fixture.unbound.address.description, "--json"]
            let run = try await httpdns(
                "resolve",
                ["a.dot.test", "--source", "auto", "--server", fixture.server, "--server-name", "dot.test", "--cacert", fixture.certificate]
                    + Self.patience + fallback
            )
            #expect(run.status == .exited(0), "\(run)")
            let answer = try object(run)
            #expect(answer["source"] as? String == "dot" && answer["fallback"] as? Bool == false, "\(run)")
            #expect(answer["ipv4"] as? [String] == ["192.0.2.1"])

            // The DoT server gone: c-ares answers, marked as a fallback.
            let closed = try ClosedTCPPort()
            let down = try await httpdns(
                "resolve",
                ["a.dot.test", "--source", "auto", "--server", "tls://127.0.0.1:\(closed.port)", "--server-name", "dot.test", "--cacert", fixture.certificate]
                    + fallback
            )
            #expect(down.status == .exited(0), "\(down)")
            let fellBack = try object(down)
            #expect(fellBack["source"] as? String == "cares" && fellBack["fallback"] as? Bool == true, "\(down)")
            #expect(fellBack["ipv4"] as? [String] == ["192.0.2.1"])
        }
    }

    @Test(arguments: [
        (["--source", "doh", "--server", "tls://127.0.0.1:8853"], "--source doh asks an HTTPDNS service"),
        (["--source", "httpdns", "--server", "tls://127.0.0.1:8853"], "names a DNS-over-TLS server, tls://127.0.0.1:8853"),
        (["--source", "dot", "--server", "https://127.0.0.1:8443"], "--source dot asks DNS-over-TLS servers, tls://IP[:PORT]"),
        (["--source", "dot"], "--source dot asks DNS-over-TLS servers: name one with --server tls://IP[:PORT]"),
        (["--source", "auto", "--server", "tls://127.0.0.1", "--server", "https://127.0.0.1"], "--server mixes DNS-over-TLS servers"),
        (["--source", "dot", "--server", "tls://dns.example"], "--server holds a DNS-over-TLS server that cannot be used"),
        (["--source", "dot", "--server", "tls://127.0.0.1", "--server-name", "192.0.2.1"], "is not a host name"),
    ])
    func badInputExitsTwoSayingWhy(_ arguments: [String], _ expected: String) async throws {
        let run = try await httpdns("resolve", ["a.dot.test"] + arguments)
        #expect(run.status == .exited(2), "\(run)")
        #expect(run.stderr.contains(expected), "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }

    // MARK: fetch

    /// `fetch` takes the same servers: the origin's name resolved over DoT, the request sent to its address.
    @Test func fetchResolvesTheOriginOverDoT() async throws {
        try await TestCertificate.with(subjectAltName: "DNS:www.dot.test") { originCertificate, originKey in
            try await withNginx(names: ["www.dot.test"], certificate: originCertificate, key: originKey) { nginx in
                try await withDoT(lines: [#"local-data: "www.dot.test. 300 IN A \#(nginx.address)""#]) { fixture in
                    let run = try await httpdns(
                        "fetch",
                        [
                            "http://www.dot.test:\(nginx.plainPort)/", "--server", fixture.server, "--server-name", "dot.test", "--cacert",
                            fixture.certificate, "--fallback", "cares", "--dns", fixture.unbound.address.description, "--json",
                        ] + Self.patience
                    )
                    #expect(run.status == .exited(0), "\(run)")
                    let response = try object(run)
                    #expect(response["status"] as? Int == 200, "\(run)")
                    #expect(response["connectedAddress"] as? String == nginx.address, "\(run)")
                    #expect((response["body"] as? String)?.contains("host=www.dot.test") == true, "\(run)")
                }
            }
        }
    }

    // MARK: health

    @Test func healthChecksADoTServer() async throws {
        try await withDoT { fixture in
            let base = [
                "--server", fixture.server, "--cacert", fixture.certificate, "--dns", fixture.unbound.address.description, "--host", "a.dot.test",
                "--timeout-ms", "10000",
            ]
            let run = try await httpdns("health", base + ["--server-name", "dot.test", "--json"])
            #expect(run.status == .exited(0), "\(run)")
            let report = try object(run)
            #expect(report["status"] as? String == "healthy", "\(run)")
            let service = try #require((report["services"] as? [[String: Any]])?.first, "\(run)")
            #expect(service["url"] as? String == fixture.server)
            #expect(service["transport"] as? String == "dot")
            #expect(service["reachable"] as? Bool == true)
            #expect((service["latencyMs"] as? Double ?? -1) >= 0)
            let certificate = try #require(service["certificate"] as? [String: Any], "\(service)")
            #expect(certificate["valid"] as? Bool == true, "\(certificate)")
            // Made for 30 days a moment ago, and read from the connection the lookups used: 29 whole days are left.
            #expect(certificate["daysLeft"] as? Int == 29, "\(certificate)")
            let host = try #require((report["hosts"] as? [[String: Any]])?.first)
            #expect(host["agree"] as? Bool == true, "\(host)")
            #expect((host["answers"] as? [[String: Any]])?.map { $0["source"] as? String } == [fixture.server, fixture.unbound.address.description])

            let text = try await httpdns("health", base + ["--server-name", "dot.test"])
            #expect(text.status == .exited(0), "\(text)")
            #expect(text.stdout.contains(fixture.server) && text.stdout.contains("valid, 29 days left"), "\(text)")

            // A name the certificate does not hold: reachable, but its certificate is not accepted. Exit 1.
            let misnamed = try await httpdns("health", base + ["--server-name", "other.test", "--json"])
            #expect(misnamed.status == .exited(1), "\(misnamed)")
            let misnamedReport = try object(misnamed)
            #expect(misnamedReport["status"] as? String == "degraded")
            let rejected = try #require((misnamedReport["services"] as? [[String: Any]])?.first)
            #expect(rejected["reachable"] as? Bool == true, "\(rejected)")
            let problem = try #require(rejected["certificate"] as? [String: Any], "\(rejected)")
            #expect(problem["valid"] as? Bool == false, "\(problem)")
            #expect((problem["problem"] as? String)?.contains("for other.test was not accepted") == true, "\(problem)")
            #expect((misnamedReport["reasons"] as? [String])?.contains { $0.hasPrefix("the certificate of \(fixture.server) is not accepted") } == true)
        }
    }

    /// A DoT server that cannot be reached: unreachable, with no certificate read.
    @Test func healthReportsAnUnreachableDoTServer() async throws {
        let closed = try ClosedTCPPort()
        let run = try await httpdns("health", ["--server", "tls://127.0.0.1:\(closed.port)", "--dns", "127.0.0.1:\(closed.port)", "--timeout-ms", "500", "--json"])
        #expect(run.status == .exited(3), "\(run)")
        let service = try #require((try object(run)["services"] as? [[String: Any]])?.first)
        #expect(service["reachable"] as? Bool == false && service["transport"] as? String == "dot", "\(service)")
        #expect(service["certificate"] is NSNull, "\(service)")
    }
}
