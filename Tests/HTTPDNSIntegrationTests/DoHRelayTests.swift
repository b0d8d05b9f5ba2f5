import Foundation
import HTTPDNSTesting
import HTTPDNSWire
import Testing

/// The service's DoH endpoint for every type besides A and AAAA: relayed to a real dnsmasq through c-ares, asked by
/// kdig over HTTP/2, a client none of us wrote.
@Suite("DoH for every type, through kdig", .timeLimit(.minutes(2)))
struct DoHRelayTests {
    static let records = OtherTypeRecords.lines + ["local-ttl=60"]

    static func tool(_ name: String) throws -> String {
        try #require(ChildProcess.find(name), "\(name) is missing: run scripts/install-deps.sh")
    }

    func withService(_ body: (_ port: Int, _ certificate: String, _ dns: DNSMasqServer) async throws -> Void) async throws {
        try await withDNSMasq(records: Self.records) { dns in
            try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
                let server = try await ServiceProcess.start(
                    ["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key],
                    environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                )
                defer { server.stop() }
                try await body(server.port, certificate, dns)
            }
        }
    }

    func kdig(_ port: Int, _ certificate: String, _ query: [String]) async throws -> ChildProcess.Completion {
        try await ChildProcess.run(
            executable: try Self.tool("kdig"),
            arguments: ["@127.0.0.1", "-p", "\(port)", "+https=/dns-query", "+tls-ca=\(certificate)"] + query
        )
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let query: [String]
        let status: String
        let answer: String?
        var testDescription: String { query.joined(separator: " ") }
    }

    static let cases: [Case] = [
        Case(query: ["mail.test", "MX"], status: "NOERROR", answer: "MX\t10 mx1.mail.test."),
        Case(query: ["txt.test", "TXT"], status: "NOERROR", answer: "TXT\t\"v=spf1 -all\""),
        Case(query: ["_sip._tcp.srv.test", "SRV"], status: "NOERROR", answer: "SRV\t1 5 5060 sip.srv.test."),
        Case(query: ["alias.test", "CNAME"], status: "NOERROR", answer: "CNAME\treal.test."),
        // A type dnsmasq knows of but has no record of (HTTPS), and one it does not know at all.
        Case(query: ["real.test", "TYPE65"], status: "NOERROR", answer: nil),
        Case(query: ["real.test", "TYPE65280"], status: "NOERROR", answer: nil),
        Case(query: ["nosuch.test", "MX"], status: "NXDOMAIN", answer: nil),
    ]

    @Test func everyTypeIsRelayed() async throws {
        try await withService { port, certificate, _ in
            for test in Self.cases {
                let run = try await kdig(port, certificate, test.query)
                #expect(run.status == .exited(0), "\(test.query): \(run)")
                #expect(run.stdout.contains("status: \(test.status)"), "\(test.query): \(run.stdout)")
                #expect(run.stdout.contains("HTTP/2"), "\(run.stdout)")
                if let answer = test.answer {
                    #expect(run.stdout.contains(answer), "\(test.query): \(run.stdout)")
                } else {
                    #expect(run.stdout.contains("ANSWER: 0"), "\(test.query): \(run.stdout)")
                }
            }
        }
    }

    /// NXDOMAIN and no data carry the upstream's SOA (RFC 2308), for A and AAAA (the service's own answers) and any
    /// other type alike, so a client knows how long to cache them; unbound gives one, with the negative TTL 120.
    @Test func negativeAnswersCarryTheUpstreamsSOA() async throws {
        let zone = [
            #"local-zone: "test." static"#,
            #"local-data: "test. 300 IN SOA ns.test. hostmaster.test. 1 3600 600 86400 120""#,
            #"local-data: "real.test. 300 IN A 192.0.2.9""#,
            #"local-data: "get-real.test. 300 IN A 192.0.2.9""#,
        ]
        try await withUnbound(lines: zone) { unbound in
            try await TestCertificate.with(subjectAltName: "IP:127.0.0.1") { certificate, key in
                let server = try await ServiceProcess.start(
                    ["--upstream", unbound.address.description, "--tls-cert", certificate, "--tls-key", key],
                    environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                )
                defer { server.stop() }
                // kdig's POST goes through the router; its GET, a miss, is looked up on the connection: each with
                // names of its own, so both miss.
                for (method, prefix) in [("+https", ""), ("+https-get", "get-")] {
                    for (name, type, status) in [("nosuch.test", "A", "NXDOMAIN"), ("real.test", "AAAA", "NOERROR"), ("nosuch.test", "MX", "NXDOMAIN")] {
                        let query = [prefix + name, type, method]
                        // Twice: the second from the caches, its SOA still there.
                        for _ in 0..<2 {
                            let run = try await kdig(server.port, certificate, query)
                            #expect(run.stdout.contains("status: \(status)"), "\(query): \(run.stdout)")
                            #expect(run.stdout.contains("AUTHORITY SECTION"), "\(query): \(run.stdout)")
                            #expect(run.stdout.contains("IN\tSOA\tns.test. hostmaster.test. 1 3600 600 86400 120"), "\(query): \(run.stdout)")
                        }
                    }
                }
            }
        }
    }

    /// Later clients are answered from the cache, each with its own spelling of the question: dnsmasq sees the
    /// question once.
    @Test func aRelayedAnswerIsCached() async throws {
        try await withService { port, certificate, dns in
            // curl with a wire query of our own: kdig writes every name in lower case.
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-doh-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            for name in ["MAIL.test", "mail.test", "Mail.Test"] {
                let query = try DNSMessage(id: 0, questions: [.init(name: name, type: .mx)]).encoded()
                let encoded = Data(query).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
                let file = directory.appendingPathComponent("answer").path
                let run = try await ChildProcess.run(
                    executable: try Self.tool("curl"),
                    arguments: ["-s", "-o", file, "--cacert", certificate, "https://127.0.0.1:\(port)/dns-query?dns=\(encoded)"]
                )
                #expect(run.status == .exited(0), "\(run)")
                let answer = try DNSMessage(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
                #expect(answer.questions.first?.name == name, "the question as this client asked it")
                #expect(answer.answers.map(\.type) == [.mx])
            }
            #expect(try dns.queryCount("MAIL.test", type: "MX") + dns.queryCount("mail.test", type: "MX") == 1)
        }
    }

    /// JSON DNS writes each record's data as `dig` presents the same record: TXT with its dots and spaces as they
    /// are (an escaped `\.` in TXT was a bug the compiler warned about), names fully qualified, the fields in order.
    @Test func jsonDNSPresentsRecordsAsDigDoes() async throws {
        let records = OtherTypeRecords.lines + [
            #"txt-record=spf.test,"v=spf1 include:_spf.example.com ~all""#,
            #"txt-record=strings.test,"a.b c","d;e""#,
        ]
        try await withDNSMasq(records: records) { dns in
            let server = try await ServiceProcess.start(["--upstream", dns.address.description], environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"])
            defer { server.stop() }
            for (name, type) in [("spf.test", "TXT"), ("strings.test", "TXT"), ("txt.test", "TXT"), ("mail.test", "MX"), ("_sip._tcp.srv.test", "SRV"), ("alias.test", "CNAME")] {
                let dig = try await ChildProcess.run(
                    executable: try Self.tool("dig"), arguments: ["+short", "@\(dns.address.ip)", "-p", "\(dns.address.port)", name, type]
                )
                #expect(dig.status == .exited(0), "\(dig)")
                let expected = dig.stdout.split(separator: "\n").map(String.init).sorted()
                #expect(!expected.isEmpty, "dig found no \(type) for \(name)")
                let run = try await ChildProcess.run(
                    executable: try Self.tool("curl"), arguments: ["-s", "http://127.0.0.1:\(server.port)/dns-query?name=\(name)&type=\(type)"]
                )
                #expect(run.status == .exited(0), "\(run)")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
                let answers = try #require(json["Answer"] as? [[String: Any]], "\(run.stdout)")
                #expect(answers.compactMap { $0["data"] as? String }.sorted() == expected, "\(name) \(type): \(run.stdout)")
            }
        }
    }

    /// Cache-Control never outlives the records (RFC 8484 §5.1), though the cache keeps an answer at least 5 s.
    @Test func cacheControlIsNeverLongerThanTheRecordsTTL() async throws {
        try await withDNSMasq(records: OtherTypeRecords.lines + ["local-ttl=1"]) { dns in
            let server = try await ServiceProcess.start(["--upstream", dns.address.description], environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"])
            defer { server.stop() }
            let run = try await ChildProcess.run(
                executable: try Self.tool("curl"), arguments: ["-s", "-D", "-", "http://127.0.0.1:\(server.port)/dns-query?name=mail.test&type=MX"]
            )
            #expect(run.stdout.lowercased().contains("cache-control: max-age=1"), "\(run.stdout)")
            #expect(run.stdout.contains(#""TTL":1,"#), "\(run.stdout)")
        }
    }
}
