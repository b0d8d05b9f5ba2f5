import HTTPDNSCore
import HTTPDNSWire
import NIOCore
import NIOHTTP1
import Testing

@testable import HTTPDNSClient

/// How a DoH response is read: only what answers the query counts.
@Suite struct DoHAnswerTests {
    let endpoint = try! ServiceEndpoint(parsing: "https://127.0.0.1/dns-query")
    let host = try! HostName("www.example.test")

    func answer(_ message: DNSMessage, status: HTTPResponseStatus = .ok) throws -> ServiceClient.Answer {
        ServiceClient.Answer(status: status, body: ByteBuffer(bytes: try message.encoded()), endpoint: endpoint)
    }

    func response(_ configure: (inout DNSMessage) -> Void) -> DNSMessage {
        var message = DNSMessage(id: 0, isResponse: true, recursionAvailable: true, questions: [.init(name: "www.example.test", type: .a)])
        configure(&message)
        return message
    }

    static func name(_ text: String) -> [UInt8] {
        text.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }

    @Test func followsTheCNAMEChainAndTakesTheSmallestTTL() throws {
        let message = response {
            $0.answers = [
                .init(name: "www.example.test", type: .cname, ttlSeconds: 30, data: Self.name("edge.example.test")),
                .init(name: "edge.example.test", address: .v4(IPv4Address("192.0.2.7")!), ttlSeconds: 60),
                // An address owned by another name is not part of the answer.
                .init(name: "elsewhere.test", address: .v4(IPv4Address("203.0.113.9")!), ttlSeconds: 60),
            ]
        }
        let family = try DoHSource.familyAnswer(try answer(message), host: host, type: .a)
        #expect(family == .addresses([.v4(IPv4Address("192.0.2.7")!)], ttlSeconds: 30))
    }

    @Test func negativeAnswersCarryTheSOAsTTL() throws {
        let soa = Self.name("ns.example.test") + Self.name("hostmaster.example.test") + [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 45]
        let message = response {
            $0.responseCode = .nameError
            $0.authorities = [.init(name: "example.test", type: .soa, ttlSeconds: 90, data: soa)]
        }
        #expect(try DoHSource.familyAnswer(try answer(message), host: host, type: .a) == .negative(.nameNotFound, ttlSeconds: 45))
    }

    @Test func aResponseThatDoesNotAnswerTheQueryIsTheAddressesFailure() throws {
        let cases: [DNSMessage] = [
            response { $0.questions = [.init(name: "other.test", type: .a)] },
            response { $0.questions = [.init(name: "www.example.test", type: .aaaa)] },
            response { $0.id = 7 },
            response { $0.isResponse = false },
            response { $0.responseCode = .serverFailure },
            response { $0.answers = [.init(name: "www.example.test", type: .a, ttlSeconds: 1, data: [1, 2, 3])] },
            response {
                $0.answers = [
                    .init(name: "www.example.test", type: .cname, ttlSeconds: 1, data: Self.name("loop.test")),
                    .init(name: "loop.test", type: .cname, ttlSeconds: 1, data: Self.name("www.example.test")),
                ]
            },
        ]
        for message in cases {
            #expect(throws: ServiceClient.AttemptFailure.self) { try DoHSource.familyAnswer(try answer(message), host: host, type: .a) }
        }
        let garbage = ServiceClient.Answer(status: .ok, body: ByteBuffer(string: "<html>"), endpoint: endpoint)
        #expect(throws: ServiceClient.AttemptFailure.self) { try DoHSource.familyAnswer(garbage, host: host, type: .a) }
    }
}

/// How a JSON DNS answer is read.
@Suite struct JSONDNSAnswerTests {
    let endpoint = try! ServiceEndpoint(parsing: "https://127.0.0.1/dns-query")
    let host = try! HostName("www.example.test")

    func read(_ text: String) throws(ServiceClient.AttemptFailure) -> FamilyAnswer<IPAddress> {
        try JSONDNSSource.familyAnswer(.init(status: .ok, body: ByteBuffer(string: text), endpoint: endpoint), host: host, type: .a)
    }

    @Test func followsTheCNAMEChain() throws {
        let text = #"{"Status":0,"Question":[{"name":"www.example.test.","type":1}],"Answer":[{"name":"www.example.test.","type":5,"TTL":20,"data":"edge.example.test."},{"name":"edge.example.test.","type":1,"TTL":60,"data":"192.0.2.7"},{"name":"other.test.","type":1,"TTL":60,"data":"203.0.113.9"}]}"#
        #expect(try read(text) == .addresses([.v4(IPv4Address("192.0.2.7")!)], ttlSeconds: 20))
    }

    @Test func whatDoesNotAnswerTheQuestionIsRefused() {
        for text in [
            #"{"Status":0,"Question":[{"name":"other.test.","type":1}]}"#,
            #"{"Status":0,"Question":[{"name":"www.example.test.","type":28}]}"#,
            #"{"Status":2,"Question":[{"name":"www.example.test.","type":1}]}"#,
            #"{"Status":0,"Question":[{"name":"www.example.test.","type":1}],"Answer":[{"name":"www.example.test.","type":1,"TTL":-1,"data":"192.0.2.7"}]}"#,
            #"{"Status":0,"Question":[{"name":"www.example.test.","type":1}],"Answer":[{"name":"www.example.test.","type":1,"TTL":5,"data":"2001:db8::1"}]}"#,
            #"not json"#,
        ] {
            #expect(throws: ServiceClient.AttemptFailure.self, "\(text)") { try read(text) }
        }
        #expect((try? read(#"{"Status":3,"Question":[{"name":"www.example.test","type":1}]}"#)) == .negative(.nameNotFound, ttlSeconds: nil))
    }
}
