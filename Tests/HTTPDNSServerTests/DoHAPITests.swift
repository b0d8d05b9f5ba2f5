import Foundation
import HTTPDNSCore
import HTTPDNSWire
import HTTPDNSServer
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// RFC 8484 (docs/WIRE-FORMATS.md §2) and JSON DNS (§3) at /dns-query.
@Suite struct DoHAPITests {
    /// A query as DoH clients send it: ID 0, RD, one question.
    static func query(_ name: String, type: UInt16) -> [UInt8] {
        (try? DNSMessage(id: 0, recursionDesired: true, questions: [.init(name: name, type: DNSRecordType(rawValue: type))]).encoded()) ?? []
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The response's header fields and answers, read with a small independent decoder.
    struct Decoded {
        var id: UInt16
        var flags: UInt16
        var questionCount: Int
        var answers: [(type: UInt16, ttl: UInt32, data: [UInt8])]
        var rcode: UInt16 { flags & 0x0F }

        init(_ bytes: [UInt8]) throws {
            func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
            try #require(bytes.count >= 12)
            id = u16(0)
            flags = u16(2)
            questionCount = Int(u16(4))
            var offset = 12
            for _ in 0..<questionCount {
                while bytes[offset] != 0 { offset += Int(bytes[offset]) + 1 }
                offset += 5
            }
            answers = []
            for _ in 0..<Int(u16(6)) {
                #expect(u16(offset) == 0xC00C, "answers point at the question name")
                let type = u16(offset + 2)
                let ttl = UInt32(u16(offset + 6)) << 16 | UInt32(u16(offset + 8))
                let length = Int(u16(offset + 10))
                answers.append((type, ttl, Array(bytes[(offset + 12)..<(offset + 12 + length)])))
                offset += 12 + length
            }
            #expect(offset == bytes.count)
        }
    }

    @Test func getAnswersAWithTheIDAndCountingDownTTL() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.test { client in
            let uri = "/dns-query?dns=\(Self.base64URL(Self.query("api.example.test", type: 1)))"
            _ = try await client.execute(uri: uri, method: .get)
            f.clock.advance(seconds: 10)
            let response = try await client.execute(uri: uri, method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/dns-message")
            #expect(response.headers[.cacheControl] == "max-age=50")
            let decoded = try Decoded(Array(buffer: response.body))
            #expect(decoded.id == 0)
            #expect(decoded.flags & 0x8000 != 0, "QR")
            #expect(decoded.flags & 0x0180 == 0x0180, "RD and RA")
            #expect(decoded.rcode == 0)
            #expect(decoded.questionCount == 1)
            #expect(decoded.answers.count == 1)
            #expect(decoded.answers.first?.type == 1)
            #expect(decoded.answers.first?.ttl == 50)
            #expect(decoded.answers.first?.data == [192, 0, 2, 10])
        }
    }

    @Test func postAnswersAAAA() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.test { client in
            let response = try await client.execute(
                uri: "/dns-query",
                method: .post,
                headers: [.contentType: "application/dns-message"],
                body: ByteBuffer(bytes: Self.query("api.example.test", type: 28))
            )
            #expect(response.status == .ok)
            let decoded = try Decoded(Array(buffer: response.body))
            #expect(decoded.answers.map(\.type) == [28])
            #expect(decoded.answers.first?.data == [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x10])
        }
    }

    @Test func nxdomainAndNoDataAndUpstreamFailure() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.test { client in
            func ask(_ name: String, _ type: UInt16) async throws -> (TestResponse, Decoded) {
                let response = try await client.execute(uri: "/dns-query?dns=\(Self.base64URL(Self.query(name, type: type)))", method: .get)
                return (response, try Decoded(Array(buffer: response.body)))
            }
            let (missingResponse, missing) = try await ask("missing.example.test", 1)
            #expect(missing.rcode == 3)
            #expect(missing.answers.isEmpty)
            #expect(missingResponse.headers[.cacheControl] == "max-age=30")
            let (_, noData) = try await ask("v4.example.test", 28)
            #expect(noData.rcode == 0)
            #expect(noData.answers.isEmpty)
            let (downResponse, down) = try await ask("down.example.test", 1)
            #expect(down.rcode == 2)
            #expect(downResponse.headers[.cacheControl] == "no-store")
        }
    }

    /// An expired NXDOMAIN served stale (the upstream failing) is still NXDOMAIN, with the stale TTL.
    @Test func aStaleNXDOMAINStaysNXDOMAIN() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.test { client in
            let uri = "/dns-query?dns=\(Self.base64URL(Self.query("missing.example.test", type: 1)))"
            _ = try await client.execute(uri: uri, method: .get)
            f.source.set("missing.example.test", .failure(.timeout))
            f.clock.advance(seconds: 31)
            let response = try await client.execute(uri: uri, method: .get)
            #expect(try Decoded(Array(buffer: response.body)).rcode == 3)
            #expect(response.headers[.cacheControl] == "max-age=30")
            let json = try await client.execute(uri: "/dns-query?name=missing.example.test", method: .get)
            #expect(json.text.hasPrefix(#"{"Status":3,"#))
        }
    }

    /// Other types are relayed when the resolver's source can relay (c-ares: DoHRelayTests); this one cannot, so
    /// they are refused, never NOTIMP, which says the opcode is not implemented. Names that are no host names are
    /// refused for A and AAAA.
    @Test func otherTypesWithoutARelayAndOddNamesAreRefused() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.test { client in
            for (name, type, rcode): (String, UInt16, UInt16) in [
                ("api.example.test", 15, 5), ("api.example.test", 16, 5), ("_dmarc.example.test", 1, 5),
            ] {
                let response = try await client.execute(uri: "/dns-query?dns=\(Self.base64URL(Self.query(name, type: type)))", method: .get)
                #expect(response.status == .ok)
                #expect(try Decoded(Array(buffer: response.body)).rcode == rcode, "\(name) type \(type)")
            }
            #expect(f.source.queryCount("api.example.test") == 0)
        }
    }

    @Test func aQueryWithoutExactlyOneQuestionIsFORMERR() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.test { client in
            let two = DNSMessage(id: 7, questions: [.init(name: "api.example.test", type: 1), .init(name: "v4.example.test", type: 1)])
            let none = DNSMessage(id: 8, questions: [])
            for message in [two, none] {
                let response = try await client.execute(uri: "/dns-query?dns=\(Self.base64URL(message.encoded()))", method: .get)
                let decoded = try Decoded(Array(buffer: response.body))
                #expect(decoded.rcode == 1)
                #expect(decoded.id == message.id)
                #expect(decoded.answers.isEmpty)
            }
            #expect(f.source.queryCount("api.example.test") == 0)
        }
    }

    @Test func badRequestsGetTheirStatus() async throws {
        let f = try ServiceFixture(NativeAPITests.dual) { $0.maxDNSMessageBytes = 100 }
        try await f.test { client in
            func code(_ response: TestResponse) -> String? {
                (try? JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any])?["code"] as? String
            }
            let notBase64 = try await client.execute(uri: "/dns-query?dns=***", method: .get)
            #expect(notBase64.status == .badRequest)
            #expect(code(notBase64) == "MalformedQuery")
            let truncated = try await client.execute(uri: "/dns-query?dns=\(Self.base64URL([0, 0, 1]))", method: .get)
            #expect(truncated.status == .badRequest)
            #expect(code(truncated) == "MalformedQuery")
            let noParameter = try await client.execute(uri: "/dns-query", method: .get)
            #expect(code(noParameter) == "MissingArgument")
            let wrongType = try await client.execute(
                uri: "/dns-query",
                method: .post,
                headers: [.contentType: "application/json"],
                body: ByteBuffer(bytes: Self.query("api.example.test", type: 1))
            )
            #expect(wrongType.status == .unsupportedMediaType)
            #expect(code(wrongType) == "UnsupportedMediaType")
            let tooLarge = try await client.execute(
                uri: "/dns-query",
                method: .post,
                headers: [.contentType: "application/dns-message"],
                body: ByteBuffer(bytes: [UInt8](repeating: 0, count: 101))
            )
            #expect(tooLarge.status == .contentTooLarge)
            #expect(code(tooLarge) == "BodyTooLarge")
            let put = try await client.execute(uri: "/dns-query", method: .put)
            #expect(put.status == .methodNotAllowed)
            #expect(put.headers[.allow] == "GET, POST")
        }
    }

    @Test func jsonDNSFollowsThePublicSchema() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.test { client in
            let response = try await client.execute(uri: "/dns-query?name=api.example.test&type=A", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/dns-json")
            #expect(
                response.text
                    == #"{"Status":0,"TC":false,"RD":true,"RA":true,"AD":false,"CD":false,"Question":[{"name":"api.example.test.","type":1}],"Answer":[{"name":"api.example.test.","type":1,"TTL":60,"data":"192.0.2.10"}]}"#
            )
            let aaaa = try await client.execute(uri: "/dns-query?name=api.example.test&type=28", method: .get)
            #expect(aaaa.text.contains(#""data":"2001:db8::10""#))
            let missing = try await client.execute(uri: "/dns-query?name=missing.example.test", method: .get)
            #expect(missing.text.hasPrefix(#"{"Status":3,"#))
            #expect(!missing.text.contains("Answer"))
            // Another type is relayed; this service's source cannot relay, so it is refused (Status 5).
            let otherType = try await client.execute(uri: "/dns-query?name=api.example.test&type=MX", method: .get)
            #expect(otherType.status == .ok)
            #expect(otherType.text.hasPrefix(#"{"Status":5,"#), "\(otherType.text)")
            // A type that is none.
            for type in ["BOGUS", "0", "65536", "TYPE"] {
                let badType = try await client.execute(uri: "/dns-query?name=api.example.test&type=\(type)", method: .get)
                #expect(badType.status == .badRequest, "\(type)")
            }
        }
    }

    @Test func metricsHealthAndReadiness() async throws {
        let f = try ServiceFixture(NativeAPITests.dual)
        try await f.test { client in
            _ = try await client.execute(uri: "/d?host=api.example.test", method: .get)
            _ = try await client.execute(uri: "/d?host=bad_name", method: .get)
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.status == .ok)
            #expect(metrics.text.contains("# HELP http_server_request_duration_seconds"))
            #expect(metrics.text.contains(#"http_server_request_duration_seconds_count{route="/d",method="GET",status="200"} 1"#))
            #expect(metrics.text.contains(#"httpdns_server_rejected_total{reason="invalid_host"} 1"#))
            #expect(!metrics.text.contains("api.example.test"))
            // An unusual method is counted as OTHER: the label stays bounded whatever clients send.
            _ = try await client.execute(uri: "/d", method: HTTPRequest.Method("PROPFIND")!)
            let after = try await client.execute(uri: "/metrics", method: .get)
            #expect(after.text.contains(#"method="OTHER""#))
            #expect(!after.text.contains("PROPFIND"))
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            // The stub answers readyz.invalid NXDOMAIN: an answer, so ready.
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            f.source.set("readyz.invalid", .failure(.timeout))
            let unready = try await client.execute(uri: "/readyz", method: .get)
            #expect(unready.status == .serviceUnavailable)
        }
    }
}
