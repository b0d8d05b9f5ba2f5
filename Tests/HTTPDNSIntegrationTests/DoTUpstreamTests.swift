import Foundation
import HTTPDNSCore
import HTTPDNSTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `httpdns serve --upstream tls://IP:PORT#NAME` and `--upstream https://IP:PORT/dns-query#NAME`: the service over DNS
/// over TLS and over HTTPS to a real unbound (its plain port never used), asked by clients none of us wrote (curl, kdig
/// over DoH, dnspython), on loopback only.
@Suite("The service over encrypted upstreams", .timeLimit(.minutes(2)))
struct DoTUpstreamTests {
    /// The encrypted kinds of upstream the tests run over.
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case tls, https

        var testDescription: String { rawValue }
        /// The source's name in metrics and logs.
        var source: String { self == .tls ? "dot" : "doh" }

        /// unbound's endpoint of this kind.
        func endpoint(_ unbound: UnboundServer) -> String {
            switch self {
            case .tls: "tls://\(unbound.address.ip):\(unbound.tlsPort!)"
            case .https: "https://\(unbound.address.ip):\(unbound.httpsPort!)/dns-query"
            }
        }
    }

    static let zone = [
        #"local-zone: "dot.test." static"#,
        #"local-data: "dot.test. 300 IN SOA ns.dot.test. hostmaster.dot.test. 1 3600 600 86400 60""#,
        #"local-data: "a.dot.test. 300 IN A 192.0.2.1""#,
        #"local-data: "a.dot.test. 300 IN AAAA 2001:db8::1""#,
        #"local-data: "mail.dot.test. 300 IN MX 10 mx1.dot.test.""#,
        #"local-data: 'txt.dot.test. 300 IN TXT "v=spf1 -all"'"#,
        #"local-data: "_sip._tcp.dot.test. 300 IN SRV 1 5 5060 sip.dot.test.""#,
        // A type nobody knows, in RFC 3597's generic form.
        ##"local-data: "odd.dot.test. 300 IN TYPE65280 \# 4 0a000001""##,
    ]

    /// What a liar answers for the same names: never what the service may give.
    static let lie = (v4: "203.0.113.66", v6: "2001:db8::bad", mx: "mx.liar.test.")

    static func tool(_ name: String) throws -> String {
        try #require(ChildProcess.find(name), "\(name) is missing: run scripts/install-deps.sh")
    }

    /// unbound serving `zone` over DoT and DoH with a certificate for `subjectAltName`; `body` gets it, its
    /// certificate and its endpoint of `kind`: `tls://IP:PORT` or `https://IP:PORT/dns-query`.
    static func withDoTUnbound(
        _ kind: Kind = .tls,
        zone: [String] = Self.zone,
        subjectAltName: String = "DNS:dot.test",
        _ body: (UnboundServer, _ certificate: String, _ endpoint: String) async throws -> Void
    ) async throws {
        try await TestCertificate.with(subjectAltName: subjectAltName) { certificate, key in
            try await withUnbound(lines: zone, tls: .init(certificate: certificate, key: key)) { unbound in
                try await body(unbound, certificate, kind.endpoint(unbound))
            }
        }
    }

    struct StartError: Error, CustomStringConvertible {
        let description: String
    }

    /// `httpdns serve` as `ServiceProcess` starts it (none of the test's own `HTTPDNS_…` variables, no rate limit),
    /// its start-up log kept and the rest of its stderr readable until ``drain()``.
    final class LoggedService: Sendable {
        let process: ChildProcess
        let port: Int
        /// stderr up to the `listening` line.
        let startLog: String

        private init(process: ChildProcess, port: Int, startLog: String) {
            self.process = process
            self.port = port
            self.startLog = startLog
        }

        static func start(_ arguments: [String]) async throws -> LoggedService {
            let executable = try ServiceProcess.executablePath()
            let unset = ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("HTTPDNS_") }.sorted().flatMap { ["-u", $0] }
            // env execs the service: the pid stays the service's.
            let process = try ChildProcess(
                executable: "/usr/bin/env",
                arguments: unset + ["HTTPDNS_RATE_LIMIT_PER_SECOND=0", executable, "serve", "--listen", "127.0.0.1:0"] + arguments
            )
            let (found, output) = await process.waitForStderr(containing: "[httpdns] listening")
            guard found, let range = output.range(of: #"port=(\d+)"#, options: .regularExpression),
                let port = Int(output[range].dropFirst("port=".count))
            else {
                let status = process.stop(signal: SIGKILL)
                throw StartError(description: "httpdns serve did not start (\(status)): \(output)")
            }
            return LoggedService(process: process, port: port, startLog: output)
        }

        /// Reads stderr until a line holds `marker`.
        func log(until marker: String) async -> (found: Bool, output: String) {
            await process.waitForStderr(containing: marker, timeoutMs: 5_000)
        }

        /// From now on stderr is read and dropped, so that the service never blocks on a full pipe. Once, after the
        /// last ``log(until:)``.
        func drain() {
            process.discardStderr()
        }

        func stop() {
            process.stop(signal: SIGTERM)
        }
    }

    /// curl's body for `url`, trusting `certificate` for https.
    static func curl(_ url: String, certificate: String? = nil) async throws -> String {
        let run = try await ChildProcess.run(
            executable: try tool("curl"),
            arguments: ["-s", "--max-time", "10"] + (certificate.map { ["--cacert", $0] } ?? []) + [url]
        )
        #expect(run.status == .exited(0), "\(url): \(run)")
        return run.stdout
    }

    /// HTTP status of `url`.
    static func status(_ url: String) async throws -> String {
        let run = try await ChildProcess.run(
            executable: try tool("curl"),
            arguments: ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", url]
        )
        return run.stdout
    }

    /// kdig over DoH (HTTP/2) to the service.
    static func kdig(_ port: Int, _ certificate: String, _ query: [String]) async throws -> ChildProcess.Completion {
        try await ChildProcess.run(
            executable: try tool("kdig"),
            arguments: ["@127.0.0.1", "-p", "\(port)", "+https=/dns-query", "+tls-ca=\(certificate)", "+timeout=5"] + query
        )
    }

    /// The sum of the samples of `family` whose labels include every one of `labels`.
    static func metric(_ exposition: String, _ family: String, _ labels: [String: String]) -> Double {
        var sum = 0.0
        for line in exposition.split(separator: "\n") where line.hasPrefix(family + "{") {
            guard labels.allSatisfy({ line.contains("\($0.key)=\"\($0.value)\"") }),
                let value = line.split(separator: " ").last.flatMap({ Double($0) })
            else { continue }
            sum += value
        }
        return sum
    }

    /// Every type through the encrypted upstream: A and AAAA from the cache (native API and DoH), the rest relayed as
    /// they are, NXDOMAIN with the zone's SOA; readiness and the metrics say which transport.
    @Test(arguments: Kind.allCases) func answersEveryTypeThroughAnEncryptedUpstream(_ kind: Kind) async throws {
        try await Self.withDoTUnbound(kind) { _, upstreamCertificate, endpoint in
            try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
                let service = try await LoggedService.start([
                    "--upstream", "\(endpoint)#dot.test", "--upstream-cacert", upstreamCertificate, "--tls-cert", certificate, "--tls-key", key,
                ])
                defer { service.stop() }
                service.drain()
                #expect(service.startLog.contains("upstream=\(kind.source) via \(endpoint)#dot.test"), "\(service.startLog)")
                #expect(service.startLog.contains("upstream.transport=\(kind)"), "\(service.startLog)")
                #expect(!service.startLog.contains("the upstream path is unencrypted"), "\(service.startLog)")
                let base = "https://127.0.0.1:\(service.port)"

                let native = try await Self.curl("\(base)/d?host=a.dot.test&query=4,6", certificate: certificate)
                #expect(native.contains(#""ips":["192.0.2.1"]"#) && native.contains(#""ipsv6":["2001:db8::1"]"#), "\(native)")

                for (query, answer) in [
                    (["a.dot.test", "A"], "A\t192.0.2.1"),
                    (["a.dot.test", "AAAA"], "AAAA\t2001:db8::1"),
                    (["mail.dot.test", "MX"], "MX\t10 mx1.dot.test."),
                    (["txt.dot.test", "TXT"], "TXT\t\"v=spf1 -all\""),
                    (["_sip._tcp.dot.test", "SRV"], "SRV\t1 5 5060 sip.dot.test."),
                    (["odd.dot.test", "TYPE65280"], "TYPE65280\t\\# 4 0A000001"),
                ] {
                    let run = try await Self.kdig(service.port, certificate, query)
                    #expect(run.status == .exited(0), "\(query): \(run)")
                    #expect(run.stdout.contains("status: NOERROR"), "\(query): \(run.stdout)")
                    #expect(run.stdout.contains(answer), "\(query): \(run.stdout)")
                    #expect(run.stdout.contains("HTTP/2"), "\(run.stdout)")
                }
                // NXDOMAIN carries the zone's SOA, for the service's own answers (A) and relayed ones alike.
                for query in [["nosuch.dot.test", "A"], ["nosuch.dot.test", "MX"]] {
                    let run = try await Self.kdig(service.port, certificate, query)
                    #expect(run.stdout.contains("status: NXDOMAIN"), "\(query): \(run.stdout)")
                    #expect(run.stdout.contains("AUTHORITY SECTION"), "\(query): \(run.stdout)")
                    #expect(run.stdout.contains("IN\tSOA\tns.dot.test. hostmaster.dot.test. 1 3600 600 86400 60"), "\(query): \(run.stdout)")
                }

                // /readyz asks the upstream (readyz.invalid: NXDOMAIN from unbound's default zones).
                let ready = try await Self.curl("\(base)/readyz", certificate: certificate)
                #expect(ready == #"{"status":"ready"}"#)

                let metrics = try await Self.curl("\(base)/metrics", certificate: certificate)
                let dot = ["source": kind.source, "transport": "\(kind)"]
                #expect(Self.metric(metrics, "httpdns_upstream_queries_total", dot.merging(["kind": "address", "outcome": "success"]) { $1 }) >= 1)
                #expect(Self.metric(metrics, "httpdns_upstream_queries_total", dot.merging(["kind": "relay", "outcome": "success"]) { $1 }) >= 4)
                #expect(Self.metric(metrics, "httpdns_upstream_queries_total", dot.merging(["kind": "relay", "outcome": "nameNotFound"]) { $1 }) >= 1)
                #expect(Self.metric(metrics, "httpdns_resolutions_total", ["source": kind.source, "outcome": "success"]) >= 1)
                #expect(!metrics.contains(#"transport="udp""#) && !metrics.contains(#"transport="tcp""#), "no plain DNS series")
                #expect(metrics.contains("# HELP httpdns_upstream_queries_total "), "\(metrics)")
            }
        }
    }

    /// A plain-DNS resolver on the upstream's own address, answering lies for the same names, is never asked and its
    /// lies never served: the service speaks only DNS over TLS. The same service pointed at it in plain DNS serves the
    /// lie (the liar works) and warns that its upstream path is unencrypted.
    @Test func aPlainDNSLiarOnThePathChangesNothing() async throws {
        try await Self.withDoTUnbound { unbound, upstreamCertificate, endpoint in
            let ports = [unbound.address.port, UInt16(unbound.tlsPort!), UInt16(unbound.httpsPort!)]
            let liar = try await Self.startLiar(at: unbound.address.ip, avoiding: ports)
            defer { liar.stop() }
            let service = try await LoggedService.start(["--upstream", "\(endpoint)#dot.test", "--upstream-cacert", upstreamCertificate])
            defer { service.stop() }
            service.drain()
            let base = "http://127.0.0.1:\(service.port)"
            for _ in 0..<2 {
                let native = try await Self.curl("\(base)/d?host=a.dot.test&query=4,6")
                #expect(native.contains("192.0.2.1") && native.contains("2001:db8::1"), "\(native)")
                let mx = try await Self.curl("\(base)/dns-query?name=mail.dot.test&type=MX")
                #expect(mx.contains("mx1.dot.test."), "\(mx)")
                for body in [native, mx] {
                    #expect(!body.contains(Self.lie.v4) && !body.contains(Self.lie.v6) && !body.contains(Self.lie.mx), "\(body)")
                }
            }
            for (name, type) in [("a.dot.test", "A"), ("a.dot.test", "AAAA"), ("mail.dot.test", "MX"), ("readyz.invalid", "A")] {
                #expect(try liar.queryCount(name, type: type) == 0, "the liar was asked \(name) \(type)")
            }

            // The control: in plain DNS, the liar's answer is what a client gets.
            let plain = try await LoggedService.start(["--upstream", liar.address.description])
            defer { plain.stop() }
            plain.drain()
            #expect(plain.startLog.contains("the upstream path is unencrypted"), "\(plain.startLog)")
            #expect(plain.startLog.contains("upstream.transport=udp"), "\(plain.startLog)")
            let lied = try await Self.curl("http://127.0.0.1:\(plain.port)/d?host=a.dot.test")
            #expect(lied.contains(Self.lie.v4), "\(lied)")
            #expect(try liar.queryCount("a.dot.test", type: "A") >= 1)
        }
    }

    /// dnsmasq answering lies for the zone's names, on `ip` at a free port.
    static func startLiar(at ip: IPAddress, avoiding ports: [UInt16]) async throws -> DNSMasqServer {
        let records = [
            "host-record=a.dot.test,\(lie.v4),\(lie.v6),300",
            "mx-host=mail.dot.test,\(lie.mx.dropLast()),10",
            "local=/invalid/",
        ]
        var lastError: (any Error)?
        for _ in 0..<5 {
            let port = UInt16.random(in: 20_000...60_000)
            guard !ports.contains(port) else { continue }
            do {
                return try await DNSMasqServer.start(records: records, at: DNSServerAddress(ip: ip, port: port))
            } catch let error as PeerStartError where error.retryable {
                lastError = error
            }
        }
        throw lastError ?? PeerStartError(description: "no free port for the liar", retryable: false)
    }

    /// Two upstreams of a kind, the first with a certificate for another name: it is refused (the log says so, at
    /// debug), the second answers, and what the first would say is never served.
    @Test(arguments: Kind.allCases) func aServerWithTheWrongCertificateIsRefusedAndTheNextAnswers(_ kind: Kind) async throws {
        let impostorZone = [
            #"local-zone: "dot.test." static"#,
            #"local-data: "a.dot.test. 300 IN A 198.51.100.66""#,
            #"local-data: "mail.dot.test. 300 IN MX 10 mx.impostor.test.""#,
        ]
        try await Self.withDoTUnbound(kind, zone: impostorZone, subjectAltName: "DNS:wrong.test") { _, impostorCertificate, impostor in
            try await Self.withDoTUnbound(kind) { _, certificate, endpoint in
                // One trust file for both: the impostor's chain verifies, so its refusal is the name's.
                let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-dot-bundle-\(UUID().uuidString).pem")
                try (try String(contentsOfFile: impostorCertificate, encoding: .utf8) + (try String(contentsOfFile: certificate, encoding: .utf8)))
                    .write(to: bundle, atomically: true, encoding: .utf8)
                defer { try? FileManager.default.removeItem(at: bundle) }
                let service = try await LoggedService.start([
                    "--upstream", "\(impostor)#dot.test", "--upstream", "\(endpoint)#dot.test",
                    "--upstream-cacert", bundle.path, "--log-level", "debug",
                ])
                defer { service.stop() }
                let base = "http://127.0.0.1:\(service.port)"
                let native = try await Self.curl("\(base)/d?host=a.dot.test")
                #expect(native.contains(#""ips":["192.0.2.1"]"#), "\(native)")
                let (found, log) = await service.log(until: kind == .tls ? "dot server failed" : "service address failed")
                service.drain()
                #expect(found, "\(log)")
                #expect(log.contains(kind == .tls ? "httpdns.server=\(impostor)" : "httpdns.service=\(impostor)"), "\(log)")
                #expect(log.contains("was not accepted"), "\(log)")

                let mx = try await Self.curl("\(base)/dns-query?name=mail.dot.test&type=MX")
                #expect(mx.contains("mx1.dot.test.") && !mx.contains("impostor"), "\(mx)")
                #expect(try await Self.curl("\(base)/readyz") == #"{"status":"ready"}"#)
                let metrics = try await Self.curl("\(base)/metrics")
                #expect(Self.metric(metrics, "httpdns_upstream_queries_total", ["transport": "\(kind)", "outcome": "success"]) >= 2, "\(metrics)")
            }
        }
    }

    /// Upstreams of every kind, in order: a DoH upstream whose certificate is for another name, a DoT upstream, and a
    /// plain-DNS liar last. The DoH one is refused (counted as such), the DoT one answers every type, the liar is never
    /// asked; the start-up log names all three in order and warns of the plain one.
    @Test func mixedUpstreamsAreAskedInOrderAndTheRefusedOnePassedOver() async throws {
        let impostorZone = [#"local-zone: "dot.test." static"#, #"local-data: "a.dot.test. 300 IN A 198.51.100.66""#]
        try await Self.withDoTUnbound(.https, zone: impostorZone, subjectAltName: "DNS:wrong.test") { _, impostorCertificate, impostor in
            try await Self.withDoTUnbound(.tls) { unbound, certificate, endpoint in
                let ports = [unbound.address.port, UInt16(unbound.tlsPort!), UInt16(unbound.httpsPort!)]
                let liar = try await Self.startLiar(at: unbound.address.ip, avoiding: ports)
                defer { liar.stop() }
                let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-mixed-bundle-\(UUID().uuidString).pem")
                try (try String(contentsOfFile: impostorCertificate, encoding: .utf8) + (try String(contentsOfFile: certificate, encoding: .utf8)))
                    .write(to: bundle, atomically: true, encoding: .utf8)
                defer { try? FileManager.default.removeItem(at: bundle) }
                let service = try await LoggedService.start([
                    "--upstream", "\(impostor)#dot.test", "--upstream", "\(endpoint)#dot.test", "--upstream", liar.address.description,
                    "--upstream-cacert", bundle.path,
                ])
                defer { service.stop() }
                service.drain()
                let order = "upstream=doh via \(impostor)#dot.test, then dot via \(endpoint)#dot.test, then cares via \(liar.address)"
                #expect(service.startLog.contains(order), "\(service.startLog)")
                #expect(service.startLog.contains("upstream.transport=https+tls+udp"), "\(service.startLog)")
                #expect(service.startLog.contains("the upstream path is unencrypted: plain DNS (udp) to cares via \(liar.address)"), "\(service.startLog)")
                #expect(service.startLog.contains("(asked when the encrypted upstreams listed before it give no answer at all)"), "\(service.startLog)")

                let base = "http://127.0.0.1:\(service.port)"
                for _ in 0..<2 {
                    let native = try await Self.curl("\(base)/d?host=a.dot.test&query=4,6")
                    #expect(native.contains(#""ips":["192.0.2.1"]"#) && native.contains("2001:db8::1"), "\(native)")
                    let mx = try await Self.curl("\(base)/dns-query?name=mail.dot.test&type=MX")
                    #expect(mx.contains("mx1.dot.test."), "\(mx)")
                    for body in [native, mx] {
                        #expect(!body.contains("198.51.100.66") && !body.contains(Self.lie.v4) && !body.contains(Self.lie.mx), "\(body)")
                    }
                }
                #expect(try await Self.curl("\(base)/readyz") == #"{"status":"ready"}"#)
                for (name, type) in [("a.dot.test", "A"), ("a.dot.test", "AAAA"), ("mail.dot.test", "MX"), ("readyz.invalid", "A")] {
                    #expect(try liar.queryCount(name, type: type) == 0, "the liar was asked \(name) \(type)")
                }
                let metrics = try await Self.curl("\(base)/metrics")
                let refused = ["source": "doh", "transport": "https", "outcome": "certificateRejected"]
                #expect(Self.metric(metrics, "httpdns_upstream_queries_total", refused) >= 1, "\(metrics)")
                #expect(Self.metric(metrics, "httpdns_upstream_queries_total", ["source": "dot", "transport": "tls", "outcome": "success"]) >= 2, "\(metrics)")
                #expect(Self.metric(metrics, "httpdns_upstream_queries_total", ["source": "cares"]) == 0, "\(metrics)")
                #expect(Self.metric(metrics, "httpdns_resolutions_total", ["source": "doh+dot+cares", "outcome": "success"]) >= 1, "\(metrics)")
            }
        }
    }

    /// With its only upstream's certificate for another name, the service is not ready, and a lookup is a 503,
    /// counted as `certificateRejected`; nothing falls back to plain DNS.
    @Test(arguments: Kind.allCases) func aRefusedCertificateMakesTheServiceUnready(_ kind: Kind) async throws {
        try await Self.withDoTUnbound(kind, subjectAltName: "DNS:wrong.test") { _, certificate, endpoint in
            let service = try await LoggedService.start(["--upstream", "\(endpoint)#dot.test", "--upstream-cacert", certificate])
            defer { service.stop() }
            service.drain()
            let base = "http://127.0.0.1:\(service.port)"
            #expect(try await Self.status("\(base)/readyz") == "503")
            #expect(try await Self.status("\(base)/d?host=a.dot.test") == "503")
            let metrics = try await Self.curl("\(base)/metrics")
            let rejected = ["source": kind.source, "transport": "\(kind)", "kind": "address", "outcome": "certificateRejected"]
            #expect(Self.metric(metrics, "httpdns_upstream_queries_total", rejected) >= 2, "\(metrics)")
        }
    }

    /// dnspython's DoH client (PyPI `dnspython[doh]`) asks the service, whose upstream is DNS over TLS: end to end,
    /// every type, NXDOMAIN with its SOA, every answer carrying its query's ID.
    @Test func dnspythonOverDoHToTheServiceOverDoT() async throws {
        let python = try #require(ChildProcess.find("python3"), "python3 is missing")
        let check = try await ChildProcess.run(
            executable: python,
            arguments: ["-c", "import dns.query, sys; sys.exit(0 if dns.query.have_doh else 1)"]
        )
        try #require(check.status == .exited(0), "dnspython[doh] is missing: run scripts/install-deps.sh")
        let script = """
            import json, sys
            import dns.message, dns.query, dns.rcode
            url, ca = sys.argv[1], sys.argv[2]
            for item in sys.argv[3:]:
                name, rdtype = item.split()
                query = dns.message.make_query(name, rdtype)
                response = dns.query.https(query, url, verify=ca, timeout=5)
                print(json.dumps({
                    "question": item,
                    "id": response.id == query.id,
                    "rcode": dns.rcode.to_text(response.rcode()),
                    "answer": [str(rrset) for rrset in response.answer],
                    "authority": [str(rrset) for rrset in response.authority],
                }))
            """
        try await Self.withDoTUnbound { _, upstreamCertificate, endpoint in
            try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
                let service = try await LoggedService.start([
                    "--upstream", "\(endpoint)#dot.test", "--upstream-cacert", upstreamCertificate, "--tls-cert", certificate, "--tls-key", key,
                ])
                defer { service.stop() }
                service.drain()
                let questions = [
                    "a.dot.test A", "a.dot.test AAAA", "mail.dot.test MX", "txt.dot.test TXT", "_sip._tcp.dot.test SRV", "odd.dot.test TYPE65280",
                    "nosuch.dot.test A", "nosuch.dot.test TXT",
                ]
                let run = try await ChildProcess.run(
                    executable: python,
                    arguments: ["-c", script, "https://127.0.0.1:\(service.port)/dns-query", certificate] + questions
                )
                #expect(run.status == .exited(0), "\(run)")
                var answers: [String: [String: Any]] = [:]
                for line in run.stdout.split(separator: "\n") {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                    answers[object["question"] as? String ?? ""] = object
                }
                func answer(_ question: String) -> String { (answers[question]?["answer"] as? [String] ?? []).joined(separator: "\n") }
                func authority(_ question: String) -> String { (answers[question]?["authority"] as? [String] ?? []).joined(separator: "\n") }
                #expect(answer("a.dot.test A").hasSuffix("IN A 192.0.2.1"), "\(answers)")
                #expect(answer("a.dot.test AAAA").hasSuffix("IN AAAA 2001:db8::1"), "\(answers)")
                #expect(answer("mail.dot.test MX").hasSuffix("IN MX 10 mx1.dot.test."), "\(answers)")
                #expect(answer("txt.dot.test TXT").hasSuffix(#"IN TXT "v=spf1 -all""#), "\(answers)")
                #expect(answer("_sip._tcp.dot.test SRV").hasSuffix("IN SRV 1 5 5060 sip.dot.test."), "\(answers)")
                #expect(answer("odd.dot.test TYPE65280").hasSuffix(##"IN TYPE65280 \# 4 0a000001"##), "\(answers)")
                for negative in ["nosuch.dot.test A", "nosuch.dot.test TXT"] {
                    #expect(answers[negative]?["rcode"] as? String == "NXDOMAIN", "\(negative): \(answers)")
                    #expect(answer(negative).isEmpty, "\(negative): \(answers)")
                    #expect(authority(negative).hasSuffix("IN SOA ns.dot.test. hostmaster.dot.test. 1 3600 600 86400 60"), "\(negative): \(answers)")
                }
                #expect(answers.count == questions.count, "\(run)")
                #expect(answers.values.allSatisfy { $0["id"] as? Bool == true }, "every answer carries its query's ID")
            }
        }
    }
}
