import Foundation
import HTTPDNSTesting
import Testing

/// The service's DoH endpoint asked by dnspython's DoH client (PyPI, `dnspython[doh]`), with unbound as the upstream:
/// every type relayed, negative answers with their SOA.
@Suite("DoH through dnspython", .timeLimit(.minutes(2)))
struct DNSPythonDoHTests {
    static let zone = [
        #"local-zone: "test." static"#,
        #"local-data: "test. 300 IN SOA ns.test. hostmaster.test. 1 3600 600 86400 120""#,
        #"local-data: "real.test. 300 IN A 192.0.2.9""#,
        #"local-data: "real.test. 300 IN HTTPS 1 . alpn=h2""#,
        #"local-data: "mail.test. 300 IN MX 10 mx1.mail.test.""#,
        #"local-data: 'txt.test. 300 IN TXT "v=spf1 -all"'"#,
        #"local-data: "_sip._tcp.srv.test. 300 IN SRV 1 5 5060 sip.srv.test.""#,
        #"local-data: "alias.test. 300 IN CNAME real.test.""#,
    ]

    /// Asks each `name type` of argv[3:] at argv[1] (the DoH URL), trusting argv[2]; prints one JSON object per
    /// question: the rcode, the answer and authority records as text.
    static let script = """
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

    @Test func everyTypeAndEveryNegativeAnswer() async throws {
        let python = try #require(ChildProcess.find("python3"), "python3 is missing")
        let check = try await ChildProcess.run(executable: python, arguments: ["-c", "import dns.query, sys; sys.exit(0 if dns.query.have_doh else 1)"])
        try #require(check.status == .exited(0), "dnspython[doh] is missing: run scripts/install-deps.sh")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-dnspython-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let scriptPath = directory.appendingPathComponent("doh.py").path
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)

        try await withUnbound(lines: Self.zone) { unbound in
            try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
                let server = try await ServiceProcess.start(
                    ["--upstream", unbound.address.description, "--tls-cert", certificate, "--tls-key", key],
                    environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                )
                defer { server.stop() }
                let questions = [
                    "mail.test MX", "txt.test TXT", "_sip._tcp.srv.test SRV", "alias.test CNAME", "real.test HTTPS",
                    "real.test TYPE65280", "nosuch.test A", "nosuch.test MX", "real.test AAAA",
                ]
                let run = try await ChildProcess.run(
                    executable: python,
                    arguments: [scriptPath, "https://127.0.0.1:\(server.port)/dns-query", certificate] + questions
                )
                #expect(run.status == .exited(0), "\(run)")
                var answers: [String: [String: Any]] = [:]
                for line in run.stdout.split(separator: "\n") {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                    answers[object["question"] as? String ?? ""] = object
                }
                func answer(_ question: String) -> [String] { answers[question]?["answer"] as? [String] ?? [] }
                func authority(_ question: String) -> [String] { answers[question]?["authority"] as? [String] ?? [] }
                #expect(answer("mail.test MX") == ["mail.test. 300 IN MX 10 mx1.mail.test."] || answer("mail.test MX").first?.hasSuffix("IN MX 10 mx1.mail.test.") == true, "\(answers)")
                #expect(answer("txt.test TXT").first?.hasSuffix(#"IN TXT "v=spf1 -all""#) == true, "\(answers)")
                #expect(answer("_sip._tcp.srv.test SRV").first?.hasSuffix("IN SRV 1 5 5060 sip.srv.test.") == true, "\(answers)")
                #expect(answer("alias.test CNAME").first?.hasSuffix("IN CNAME real.test.") == true, "\(answers)")
                #expect(answer("real.test HTTPS").first?.hasSuffix(#"IN HTTPS 1 . alpn="h2""#) == true, "\(answers)")
                #expect(answers["real.test TYPE65280"]?["rcode"] as? String == "NOERROR" && answer("real.test TYPE65280").isEmpty, "\(answers)")
                for negative in ["nosuch.test A", "nosuch.test MX", "real.test AAAA"] {
                    #expect(answers[negative]?["rcode"] as? String == (negative == "real.test AAAA" ? "NOERROR" : "NXDOMAIN"), "\(negative): \(answers)")
                    #expect(answer(negative).isEmpty)
                    #expect(authority(negative).first?.hasSuffix("IN SOA ns.test. hostmaster.test. 1 3600 600 86400 120") == true, "\(negative): \(answers)")
                }
                #expect(answers.values.allSatisfy { $0["id"] as? Bool == true }, "every answer carries its query's ID")

                // JSON DNS, through curl: the same answers in presentation form.
                let curl = try #require(ChildProcess.find("curl"))
                for (query, expected) in [
                    // The TTL is the record's (300) less the seconds the answer has spent in the cache: not checked
                    // to the second on a busy machine.
                    ("name=mail.test&type=MX", #""data":"10 mx1.mail.test.""#),
                    ("name=_sip._tcp.srv.test&type=33", #""data":"1 5 5060 sip.srv.test.""#),
                    ("name=txt.test&type=txt", #""data":"\"v=spf1 -all\"""#),
                    // The SOA's TTL likewise (120 less its time in the cache, so 1xx).
                    ("name=nosuch.test&type=MX", #""Authority":[{"name":"test.","type":6,"TTL":1"#),
                    ("name=nosuch.test&type=MX", #""data":"ns.test. hostmaster.test. 1 3600 600 86400 120"}]"#),
                ] {
                    let json = try await ChildProcess.run(
                        executable: curl, arguments: ["-s", "--cacert", certificate, "https://127.0.0.1:\(server.port)/dns-query?\(query)"]
                    )
                    #expect(json.stdout.contains(expected), "\(query): \(json.stdout)")
                }
            }
        }
    }
}
