import Foundation
import HTTPDNSTesting
import Testing

/// The example backend (Examples/Backend): a process that links the libraries, exports their metrics on its own
/// small server and mounted on a Hummingbird app, and sends one request through the interceptor. Its service is
/// down and its fallback, a real dnsmasq, lies, so that the guard's and the fallback's families are there too.
/// curl scrapes both endpoints and promtool checks what they serve.
@Suite("metrics for backends that link the library", .timeLimit(.minutes(2)))
struct MetricsExampleTests {
    /// Every family of the architecture page a linking backend records (the service's own two aside), once traffic
    /// has flowed; `httpdns_upstream_requests_total` is `httpdns_resolutions_total{source,outcome}` here.
    static let families = [
        "httpdns_resolutions_total", "httpdns_resolution_duration_seconds", "httpdns_cache_lookups_total", "httpdns_cache_entries",
        "httpdns_cache_evictions_total", "httpdns_coalesced_lookups_total", "httpdns_hijack_suspected_total", "httpdns_fallbacks_total",
        "httpdns_interceptor_requests_total", "httpdns_connect_failovers_total",
    ]

    static func tool(_ name: String) throws -> String {
        try #require(ChildProcess.find(name), "\(name) is missing: run scripts/install-deps.sh")
    }

    static func shell(_ script: String) async throws -> ChildProcess.Completion {
        try await ChildProcess.run(executable: "/bin/sh", arguments: ["-c", script])
    }

    /// The port at the end of the line of `output` that starts with `prefix`.
    static func port(after prefix: String, in output: String) throws -> Int {
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix(prefix) }, "no '\(prefix)' in \(output)")
        return try #require(Int(line.split(separator: ":").last ?? ""), "no port in \(line)")
    }

    @Test func bothEndpointsServeEveryFamilyAndPassPromtool() async throws {
        let closed = try ClosedTCPPort()
        try await withDNSMasq(records: ["address=/bank.test/10.0.0.66"]) { liar in
            let process = try ChildProcess(
                executable: try ServiceProcess.executablePath(named: "httpdns-example-backend"),
                arguments: [
                    "--server", "https://127.0.0.1:\(closed.port)", "--dns", liar.address.description, "--fetch", "https://bank.test/",
                    "--metrics-port", "0", "--app-port", "0",
                ]
            )
            defer { process.stop() }
            let started = await process.waitForStderr(containing: "traffic done")
            try #require(started.found, "\(started.output)")
            #expect(started.output.contains("https://bank.test/: resolution_failed"), "\(started.output)")
            // The traffic waits for the metrics server, not for the app: on a busy machine the app may say it listens
            // after the traffic is done. Its whole line, to the newline, is what gives the port.
            var output = started.output
            func appLine(_ output: String) -> Bool {
                guard let said = output.range(of: "app listening on") else { return false }
                return output[said.upperBound...].contains("\n")
            }
            while !appLine(output) {
                let more = await process.waitForStderr(containing: output.contains("app listening on") ? "\n" : "app listening on")
                output += more.output
                try #require(more.found, "\(output)")
            }
            process.discardStderr()
            let metricsPort = try Self.port(after: "metrics listening on", in: output)
            let appPort = try Self.port(after: "app listening on", in: output)
            let curl = try Self.tool("curl")
            for url in ["http://127.0.0.1:\(metricsPort)/metrics", "http://127.0.0.1:\(appPort)/metrics"] {
                let scrape = try await ChildProcess.run(executable: curl, arguments: ["-s", "-D", "-", url])
                #expect(scrape.status == .exited(0), "\(scrape)")
                #expect(scrape.stdout.lowercased().contains("content-type: text/plain; version=0.0.4"), "\(scrape.stdout.prefix(300))")
                for family in Self.families {
                    #expect(scrape.stdout.contains("# TYPE \(family) "), "\(url) lacks \(family)")
                    #expect(scrape.stdout.contains("# HELP \(family) "), "\(url) has no help for \(family)")
                }
                #expect(scrape.stdout.contains(#"httpdns_hijack_suspected_total{reason="private-answer"} 1"#), "\(scrape.stdout)")
                // The reasons not seen yet are there at zero, so that an alert on increase() sees their first event.
                #expect(scrape.stdout.contains(#"httpdns_hijack_suspected_total{reason="nxdomain-rewrite"} 0"#), "\(scrape.stdout)")
                #expect(scrape.stdout.contains(#"httpdns_hijack_suspected_total{reason="address-swap"} 0"#), "\(scrape.stdout)")
                #expect(scrape.stdout.contains(#"httpdns_fallbacks_total{from="httpdns",to="cares"} 1"#), "\(scrape.stdout)")
                #expect(scrape.stdout.contains(#"httpdns_interceptor_requests_total{outcome="resolution_failed"} 1"#), "\(scrape.stdout)")
                let check = try await Self.shell("'\(curl)' -s \(url) | '\(try Self.tool("promtool"))' check metrics")
                #expect(check.status == .exited(0), "promtool: \(check.stdout) \(check.stderr)")
            }
            // The small server answers /metrics and nothing else.
            let codes = try await Self.shell(
                "'\(curl)' -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:\(metricsPort)/other; "
                    + "'\(curl)' -s -o /dev/null -w '%{http_code} ' -X DELETE http://127.0.0.1:\(metricsPort)/metrics; "
                    + "'\(curl)' -s -o /dev/null -w '%{http_code}' -d 'x=1' http://127.0.0.1:\(metricsPort)/metrics"
            )
            #expect(codes.stdout == "404 405 413", "\(codes)")
            #expect(process.stop() == .exited(0), "SIGTERM ends it gracefully")
        }
    }
}
