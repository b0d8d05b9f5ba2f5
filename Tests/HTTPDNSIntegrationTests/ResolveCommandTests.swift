import Foundation
import Glibc
import HTTPDNSTesting
import Testing

/// `httpdns resolve` run as a real process: the built `httpdns` binary against a real dnsmasq.
@Suite("httpdns resolve, the built executable")
struct ResolveCommandTests {
    /// Runs `httpdns ARGUMENTS`.
    func httpdns(_ arguments: String...) async throws -> ChildProcess.Completion {
        try await ChildProcess.run(executable: try ServiceProcess.executablePath(), arguments: arguments)
    }

    /// Runs `httpdns resolve HOST --dns SERVER ARGUMENTS` against a dnsmasq serving ``TestRecords``.
    func resolve(_ host: String, _ arguments: String...) async throws -> ChildProcess.Completion {
        try await withDNSMasq(records: TestRecords.lines) { server in
            try await ChildProcess.run(
                executable: try ServiceProcess.executablePath(),
                arguments: ["resolve", host, "--dns", server.address.description] + arguments
            )
        }
    }

    /// A UDP port on 127.0.0.1 where nothing listens: bound to port 0, read back, closed.
    static func unusedPort() throws -> UInt16 {
        let socketFD = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(socketFD >= 0, "socket: \(String(cString: strerror(errno)))")
        defer { close(socketFD) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) }
        }
        try #require(bound == 0, "bind: \(String(cString: strerror(errno)))")
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        try #require(named == 0, "getsockname: \(String(cString: strerror(errno)))")
        let port = UInt16(bigEndian: address.sin_port)
        try #require(port != 0)
        return port
    }

    /// The JSON object `stdout` holds, and nothing else.
    func jsonObject(_ stdout: String) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        return try #require(value as? [String: Any], "stdout is not a JSON object: \(stdout)")
    }

    /// The typed members of a successful `--json` answer; JSONDecoder is strict (a number is not a Bool).
    struct Answer: Decodable, Equatable {
        let host: String
        let ipv4: [String]
        let ipv6: [String]
        let ttl: Int
        let source: String
        let cached: Bool
        let stale: Bool
        let fallback: Bool
        let verdict: Verdict
        let durationMs: Double

        struct Verdict: Decodable, Equatable {
            let level: String
            let reason: String
        }
    }

    static let answerKeys: Set = ["host", "ipv4", "ipv6", "ttl", "source", "fallback", "verdict", "cached", "stale", "durationMs"]

    func answer(_ completion: ChildProcess.Completion) throws -> Answer {
        let object = try jsonObject(completion.stdout)
        #expect(Set(object.keys) == Self.answerKeys, "\(completion)")
        return try JSONDecoder().decode(Answer.self, from: Data(completion.stdout.utf8))
    }

    // MARK: Answers

    @Test("--json: one object with both families, the TTL and the source")
    func dualJSON() async throws {
        let run = try await resolve("dual.test", "--json")
        #expect(run.status == .exited(0), "\(run)")
        let answer = try answer(run)
        #expect(answer.host == "dual.test")
        #expect(answer.ipv4 == ["192.0.2.10"])
        #expect(answer.ipv6 == ["2001:db8::10"])
        #expect(answer.ttl == 60)
        #expect(answer.source == "cares")
        #expect(answer.fallback == false)
        #expect(answer.verdict == .init(level: "ok", reason: "none"))
        #expect(answer.cached == false)
        #expect(answer.stale == false)
        #expect(answer.durationMs >= 0)
        #expect(run.stdout.hasSuffix("}\n"), "one object, one line: \(run.stdout)")
    }

    @Test("Text output lists each address with its record type")
    func dualText() async throws {
        let run = try await resolve("dual.test")
        #expect(run.status == .exited(0), "\(run)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("dual.test\tA\t192.0.2.10"), "\(run)")
        #expect(lines.contains("dual.test\tAAAA\t2001:db8::10"), "\(run)")
        #expect(lines.contains { $0.hasPrefix("ttl 60s, source cares") }, "\(run)")
        #expect(run.stderr.isEmpty, "\(run)")
    }

    @Test("--type A of an AAAA-only name: exit 1, no data")
    func aaaaOnlyAskedForA() async throws {
        let run = try await resolve("v6only.test", "--type", "A")
        #expect(run.status == .exited(1), "\(run)")
        #expect(run.stderr.contains("no A address"), "\(run)")
        #expect(run.stderr.contains("no data"), "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }

    @Test("--type ANY of an AAAA-only name: exit 0, only IPv6")
    func aaaaOnlyAskedForAny() async throws {
        let run = try await resolve("v6only.test", "--type", "ANY", "--json")
        #expect(run.status == .exited(0), "\(run)")
        let answer = try answer(run)
        #expect(answer.ipv4 == [])
        #expect(answer.ipv6 == ["2001:db8::66"])
        // The answer's TTL also covers the cached "no A data", whose negative TTL may be shorter than the AAAA's 120.
        #expect((1...120).contains(answer.ttl), "\(run)")
    }

    @Test("A name that does not exist: exit 1, NXDOMAIN")
    func nxdomainText() async throws {
        let run = try await resolve("missing.test")
        #expect(run.status == .exited(1), "\(run)")
        #expect(run.stderr.contains("NXDOMAIN"), "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }

    @Test("A name that does not exist, --json: exit 1 and an error object with code nameNotFound")
    func nxdomainJSON() async throws {
        let run = try await resolve("missing.test", "--json")
        #expect(run.status == .exited(1), "\(run)")
        #expect(run.stderr.contains("NXDOMAIN"), "\(run)")
        let object = try jsonObject(run.stdout)
        #expect(object["host"] as? String == "missing.test", "\(run)")
        #expect(object["source"] as? String == "cares", "\(run)")
        let error = try #require(object["error"] as? [String: Any], "\(run)")
        #expect(error["code"] as? String == "nameNotFound", "\(run)")
        let message = try #require(error["message"] as? String, "\(run)")
        #expect(message.contains("NXDOMAIN"), "\(run)")
    }

    @Test("A CNAME chain answers with the smallest TTL along it")
    func cnameChain() async throws {
        let run = try await resolve("alias2.test", "--json")
        #expect(run.status == .exited(0), "\(run)")
        let answer = try answer(run)
        #expect(answer.host == "alias2.test")
        #expect(answer.ipv4 == ["192.0.2.10"])
        #expect(answer.ipv6 == ["2001:db8::10"])
        #expect(answer.ttl == 15)
    }

    @Test("--tcp asks over TCP and gets the same answer")
    func overTCP() async throws {
        let run = try await resolve("dual.test", "--tcp", "--json")
        #expect(run.status == .exited(0), "\(run)")
        let answer = try answer(run)
        #expect(answer.ipv4 == ["192.0.2.10"])
        #expect(answer.ipv6 == ["2001:db8::10"])
        #expect(answer.ttl == 60)
    }

    // MARK: Bad input, exit 2

    /// A case of bad input: the arguments after `httpdns`, and a fragment stderr must contain.
    struct BadInput: Sendable, CustomTestStringConvertible {
        let label: String
        let arguments: [String]
        let fragment: String
        var testDescription: String { label }
    }

    /// Where an invalid command would send queries if it wrongly went ahead: nothing listens there, and only
    /// loopback is ever asked.
    static let silentServer = "127.0.0.1:\((try? unusedPort()) ?? 9)"

    /// A syntactically valid name under `test.` of exactly `bytes` bytes: labels of 63 bytes, then a shorter one.
    static func name(bytes: Int) -> String {
        var prefix = ""
        var remaining = bytes - ".test".utf8.count
        while remaining > 64 {
            prefix += String(repeating: "x", count: 63) + "."
            remaining -= 64
        }
        return prefix + String(repeating: "y", count: remaining) + ".test"
    }

    static let badInputs: [BadInput] = [
        BadInput(
            label: "a name with an underscore",
            arguments: ["resolve", "bad_name", "--dns", silentServer],
            fragment: "'_' is not allowed"
        ),
        BadInput(
            label: "a 254-byte name",
            arguments: ["resolve", name(bytes: 254), "--dns", silentServer],
            fragment: "is 254 bytes long; at most 253"
        ),
        BadInput(
            label: "a 64-byte label",
            arguments: ["resolve", String(repeating: "b", count: 64) + ".test", "--dns", silentServer],
            fragment: "label 1 is 64 bytes long; at most 63"
        ),
        BadInput(
            label: "--dns with three octets",
            arguments: ["resolve", "dual.test", "--dns", "1.2.3"],
            fragment: "invalid DNS server '1.2.3'"
        ),
        BadInput(
            label: "--dns given a name",
            arguments: ["resolve", "dual.test", "--dns", "example.com"],
            fragment: "never by name"
        ),
        BadInput(
            label: "--dns with port 0",
            arguments: ["resolve", "dual.test", "--dns", "127.0.0.1:0"],
            fragment: "'0' is not a port number"
        ),
        BadInput(
            label: "--dns with --source system",
            arguments: ["resolve", "localhost", "--source", "system", "--dns", "127.0.0.1"],
            fragment: "applies to --source cares or auto"
        ),
        BadInput(
            label: "--timeout-ms 0",
            arguments: ["resolve", "dual.test", "--dns", silentServer, "--timeout-ms", "0"],
            fragment: "--timeout-ms must be a positive"
        ),
        BadInput(
            label: "--type MX",
            arguments: ["resolve", "dual.test", "--dns", silentServer, "--type", "MX"],
            fragment: "--type must be A, AAAA or ANY, not 'MX'"
        ),
    ]

    @Test("Bad input ends with exit 2 and says what is wrong", arguments: badInputs)
    func badInput(_ input: BadInput) async throws {
        let run = try await ChildProcess.run(executable: try ServiceProcess.executablePath(), arguments: input.arguments)
        #expect(run.status == .exited(2), "\(run)")
        #expect(run.stderr.contains(input.fragment), "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }

    @Test("The longest valid name, 253 bytes, is looked up (the 254-byte one above is one byte longer)")
    func nameLengthBoundary() async throws {
        #expect(Self.name(bytes: 254).utf8.count == 254)
        let longest = Self.name(bytes: 253)
        #expect(longest.utf8.count == 253)
        let run = try await resolve(longest)
        #expect(run.status == .exited(1), "\(run)")
        #expect(run.stderr.contains("NXDOMAIN"), "\(run)")
    }

    // MARK: Unreachable, exit 3

    @Test("A server where nothing listens: exit 3, naming the server")
    func unreachable() async throws {
        let port = try Self.unusedPort()
        let run = try await httpdns("resolve", "dual.test", "--dns", "127.0.0.1:\(port)", "--timeout-ms", "200", "--tries", "1")
        #expect(run.status == .exited(3), "\(run)")
        #expect(run.stderr.contains("127.0.0.1:\(port)"), "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
    }

    @Test("A server where nothing listens, --json: exit 3 and an error object")
    func unreachableJSON() async throws {
        let port = try Self.unusedPort()
        let run = try await httpdns(
            "resolve",
            "dual.test",
            "--dns",
            "127.0.0.1:\(port)",
            "--timeout-ms",
            "200",
            "--tries",
            "1",
            "--json"
        )
        #expect(run.status == .exited(3), "\(run)")
        let object = try jsonObject(run.stdout)
        let error = try #require(object["error"] as? [String: Any], "\(run)")
        let code = try #require(error["code"] as? String, "\(run)")
        #expect(["timeout", "serverUnreachable"].contains(code), "\(run)")
        #expect((error["message"] as? String)?.contains("127.0.0.1:\(port)") == true, "\(run)")
        #expect(run.stderr.contains("127.0.0.1:\(port)"), "\(run)")
    }

    // MARK: The system resolver

    static var hostsFileHasLocalhost: Bool {
        guard let hosts = try? String(contentsOfFile: "/etc/hosts", encoding: .utf8) else { return false }
        return hosts.split(separator: "\n").contains { line in
            let fields = line.prefix { $0 != "#" }.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return fields.count >= 2 && fields.dropFirst().contains("localhost")
        }
    }

    @Test(
        "--source system answers localhost from /etc/hosts",
        .enabled(if: hostsFileHasLocalhost, "/etc/hosts has no localhost entry")
    )
    func systemLocalhost() async throws {
        let run = try await httpdns("resolve", "localhost", "--source", "system", "--json")
        #expect(run.status == .exited(0), "\(run)")
        let answer = try answer(run)
        #expect(answer.host == "localhost")
        #expect(answer.source == "system")
        #expect(!(answer.ipv4 + answer.ipv6).isEmpty, "\(run)")
        #expect(answer.ipv4.allSatisfy { $0.hasPrefix("127.") }, "\(run)")
        #expect(answer.ipv6.allSatisfy { $0 == "::1" }, "\(run)")
    }
}
