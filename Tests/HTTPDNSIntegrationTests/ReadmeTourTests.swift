import Foundation
import HTTPDNSTesting
import Testing

/// The README's five-minute tour, run as written: its shell blocks between the `tour` markers in order, and its
/// Swift block the same, word for word, as Examples/Tour/main.swift (which the build compiles and the tour runs).
///
/// One line is not run: `swift build`. The test runs inside `swift test`, which holds the build directory's lock,
/// so a build from here would wait for itself; the build is the one the tests run from, already on `PATH`.
@Suite("the README's tour", .timeLimit(.minutes(3)))
struct ReadmeTourTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The fenced blocks of `language` between the markers.
    static func blocks(_ language: String, in readme: String) throws -> [String] {
        let start = try #require(readme.range(of: "<!-- tour:begin -->"), "no tour:begin marker")
        let end = try #require(readme.range(of: "<!-- tour:end -->"), "no tour:end marker")
        var blocks: [String] = []
        var current: [Substring]?
        for line in readme[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```\(language)" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test func theTourRunsAsWritten() async throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let swift = try Self.blocks("swift", in: readme)
        let example = try String(contentsOf: Self.root.appendingPathComponent("Examples/Tour/main.swift"), encoding: .utf8)
        #expect(swift.map { $0 + "\n" } == [example], "the README's Swift differs from Examples/Tour/main.swift")

        let shell = try Self.blocks("sh", in: readme).joined(separator: "\n")
        #expect(shell.contains("swift build\n"))
        let runnable = shell.split(separator: "\n", omittingEmptySubsequences: false).filter { $0 != "swift build" }.joined(separator: "\n")
        // The tour's `export PATH="$PWD/.build/debug:$PATH"` names the debug build of the repository: here, the
        // build the tests run from, wherever that is.
        let binaries = URL(fileURLWithPath: try ServiceProcess.executablePath()).deletingLastPathComponent().path
        let tourPath = #"export PATH="$PWD/.build/debug:$PATH""#
        #expect(runnable.contains(tourPath))
        #expect(runnable.contains("\nhttpdns health "))
        // Whatever the tour started is stopped, however it ends. The commands give the service 10 s, not their
        // default 1 or 2 s: the suite's other processes share the machine, and once a loaded CI machine took
        // longer, so fetch asked its fallback, the system resolver, which knows no tour.test. `resolve` and `fetch`
        // read theirs from the environment; `health` reads HTTPDNS_TIMEOUT_MS, set on its line alone (`resolve
        // --source httpdns` refuses that one, a c-ares setting). The README's reader runs the commands on a quiet
        // machine, with the defaults. The library's lookup, `httpdns-tour`, keeps them: scripts/test.sh runs this
        // test alone, after the other suites.
        let script = """
            set -euo pipefail
            export HTTPDNS_BUDGET_MS=10000 HTTPDNS_ATTEMPT_TIMEOUT_MS=10000
            trap 'set +e; jobs -p | xargs -r kill 2>/dev/null; [ -n "${tour:-}" ] && [ -f "$tour/dnsmasq.pid" ] && kill "$(cat "$tour/dnsmasq.pid")" 2>/dev/null; [ -n "${tour:-}" ] && rm -rf "$tour"' EXIT
            cd '\(Self.root.path)'
            \(runnable.replacingOccurrences(of: tourPath, with: "export PATH='\(binaries)':\"$PATH\"").replacingOccurrences(of: "\nhttpdns health ", with: "\nHTTPDNS_TIMEOUT_MS=10000 httpdns health "))
            """
        let run = try await ChildProcess.run(executable: "/bin/bash", arguments: ["-c", script], timeoutMs: 120_000)
        #expect(run.status == .exited(0), "\(run)")
        #expect(run.stdout.contains("tour.test\tA\t127.0.0.154"), "resolve: \(run.stdout)")
        #expect(run.stdout.contains("healthy: 1 service, 1 DNS server, 1 probe name"), "health: \(run.stdout)")
        #expect(run.stderr.contains("tour.test:8443"), "fetch -v names the Host: \(run.stderr)")
        #expect(run.stdout.contains("200 127.0.0.154"), "the library's request: \(run.stdout)")
    }
}
