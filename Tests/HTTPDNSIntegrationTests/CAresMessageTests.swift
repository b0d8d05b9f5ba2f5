import HTTPDNSCAres
import HTTPDNSCore
import HTTPDNSTesting
import HTTPDNSWire
import Testing

/// `CAresSource.send`: DNS messages of any type relayed to a real dnsmasq as they are, its answers returned whole.
@Suite("c-ares relaying messages of any type to a real dnsmasq")
struct CAresMessageTests {
    static let records = OtherTypeRecords.lines + ["host-record=v4only.test,192.0.2.10,300"]

    func withSource(_ body: (CAresSource) async throws -> Void) async throws {
        try await withDNSMasq(records: Self.records) { server in
            let source = try CAresSource(configuration: .init(servers: [server.address]))
            do {
                try await body(source)
            } catch {
                await source.shutdown()
                throw error
            }
            await source.shutdown()
        }
    }

    func ask(_ source: CAresSource, _ name: String, _ type: DNSRecordType) async throws -> DNSMessage {
        let query = DNSMessage(id: 0xBEEF, questions: [.init(name: name, type: type)])
        let answer = try DNSMessage(parsing: try await source.send(try query.encoded()))
        #expect(answer.isResponse)
        #expect(answer.questions == query.questions, "the answer is to the question asked")
        return answer
    }

    @Test func typesBesidesAddressesComeBackWhole() async throws {
        try await withSource { source in
            let mx = try await ask(source, "mail.test", .mx)
            #expect(mx.responseCode == .noError)
            #expect(mx.answers.map(\.type) == [.mx])
            // Preference 10, then mx1.mail.test, its name expanded.
            #expect(mx.answers.first?.data == [0, 10] + Self.wireName("mx1.mail.test"))

            let txt = try await ask(source, "txt.test", .txt)
            #expect(txt.answers.first?.data == [UInt8("v=spf1 -all".utf8.count)] + Array("v=spf1 -all".utf8))

            let srv = try await ask(source, "_sip._tcp.srv.test", .srv)
            // Priority 1, weight 5, port 5060, then the target.
            #expect(srv.answers.first?.data == [0, 1, 0, 5, 0x13, 0xC4] + Self.wireName("sip.srv.test"))
        }
    }

    @Test func aCNAMEChainIsKept() async throws {
        try await withSource { source in
            let answer = try await ask(source, "alias.test", .a)
            #expect(answer.answers.map(\.type) == [.cname, .a])
            #expect(answer.answers.first?.data == Self.wireName("real.test"))
            #expect(answer.answers.last?.data == [192, 0, 2, 9])
        }
    }

    @Test func negativeAnswersAreAnswers() async throws {
        try await withSource { source in
            let missing = try await ask(source, "nosuch.test", .mx)
            #expect(missing.responseCode == .nameError)
            #expect(missing.answers.isEmpty)
            let noData = try await ask(source, "v4only.test", .aaaa)
            #expect(noData.responseCode == .noError)
            #expect(noData.answers.isEmpty)
            // A type dnsmasq has no data for, by number.
            let unknown = try await ask(source, "real.test", 65_280)
            #expect(unknown.responseCode == .noError)
            #expect(unknown.answers.isEmpty)
        }
    }

    @Test func aQueryCAresRefusesIsABadQueryAndASilentServerTimesOut() async throws {
        try await withSource { source in
            let error = await #expect(throws: ResolutionError.self) { try await source.send([1, 2, 3]) }
            #expect(error?.code == .badName, "\(String(describing: error))")
        }
        let silent = try SilentTCPListener()
        let source = try CAresSource(
            configuration: .init(servers: [DNSServerAddress(ip: .v4(IPv4Address("127.0.0.1")!), port: UInt16(silent.port))], transport: .tcp)
        )
        let query = try DNSMessage(id: 1, questions: [.init(name: "mail.test", type: .mx)]).encoded()
        let error = await #expect(throws: ResolutionError.self) { try await source.send(query) }
        #expect(error?.code == .timeout, "\(String(describing: error))")
        await source.shutdown()
    }

    /// `name` in wire form, uncompressed.
    static func wireName(_ name: String) -> [UInt8] {
        name.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }
}
