import Foundation
import HTTPDNSTesting
import Testing

/// `httpdns fetch --dry-run` as a process: the canonical request as it would be sent, resolving and sending nothing.
@Suite("httpdns fetch --dry-run, the built executable")
struct FetchCommandTests {
    /// `httpdns fetch ARGUMENTS`, without the test's own `HTTPDNS_…` variables.
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> ChildProcess.Completion {
        try await ServiceProcess.runCommand("fetch", arguments, environment: environment)
    }

    func fetch(_ arguments: String...) async throws -> ChildProcess.Completion {
        try await Self.run(arguments)
    }

    @Test func printsTheCanonicalRequestWithItsHostHeaderAndDefaults() async throws {
        let run = try await fetch("HTTP://WWW.Example.COM:80/a/./b/../c?x=%7e#top", "--dry-run")
        #expect(run.status == .exited(0), "\(run)")
        #expect(run.stdout == "GET http://www.example.com:80/a/c?x=~\nHost: www.example.com\nAccept: */*\nAccept-Encoding: gzip, deflate\n")
    }

    @Test func jsonHasTheMethodTheURLAndTheHeadersAsSent() async throws {
        let run = try await fetch("https://API.example/x", "--dry-run", "--json", "-d", "a=1", "-H", "accept: text/html", "-H", "X-Tag: 1", "-H", "x-tag: 2", "--compat", "apple")
        #expect(run.status == .exited(0), "\(run)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
        #expect(object["method"] as? String == "POST", "-d makes a POST")
        #expect(object["url"] as? String == "https://api.example/x")
        #expect(
            object["headers"] as? [String: String] == [
                "Host": "api.example", "accept": "text/html", "X-Tag": "1, 2", "Accept-Encoding": "gzip, deflate",
                "Accept-Language": "en-us", "Content-Type": "application/x-www-form-urlencoded",
            ]
        )
        #expect(Set(object.keys) == ["method", "url", "headers"])
    }

    @Test(arguments: [
        (["ftp://a.example/", "--dry-run"], "is not an http or https URL"),
        (["http://a b/", "--dry-run"], "a space or control character"),
        (["http:///x", "--dry-run"], "the host is empty"),
        (["http://a.example/", "--dry-run", "-H", "no colon"], "-H takes 'Name: value'"),
        (["http://a.example/", "--dry-run", "--compat", "ios"], "--compat takes apple"),
        (["http://a.example/", "--adapter", "curl"], "--adapter takes asynchttpclient or urlsession"),
        (["http://a.example/", "--max-redirects=-1"], "--max-redirects takes 0 or more"),
        (["http://a.example/", "--dns", "not-an-address"], "dns"),
        (["http://a.example/", "--budget-ms", "5000"], "--budget-ms (budgetMs, HTTPDNS_BUDGET_MS) concern the HTTPDNS service, and none is set"),
        (["http://a.example/", "--server-name", "dns.example"], "name one with --server (servers, HTTPDNS_SERVERS)"),
        (["http://a.example/", "--fallback", "cares", "--dry-run"], "--fallback (fallbacks, HTTPDNS_FALLBACKS) concern"),
        (
            ["http://a.example/", "--pin", "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "--dry-run"],
            "--pin (pins, HTTPDNS_PINS) concern the HTTPDNS service, and none is set"
        ),
        (
            ["http://a.example/", "--server", "https://127.0.0.1:9", "--attempt-timeout-ms", "5000"],
            "must be at most the budget, --budget-ms (2000 ms)"
        ),
        (["http://a.example/", "--server", "https://127.0.0.1:9", "--budget-ms", "0", "--dry-run"], "--budget-ms must be a positive whole number"),
    ])
    func badInputExits2SayingWhy(_ arguments: [String], _ fragment: String) async throws {
        let run = try await Self.run(arguments)
        #expect(run.status == .exited(2), "\(run)")
        #expect(run.stderr.contains(fragment), "\(run)")
        #expect(run.stdout.isEmpty)
    }

    /// The service's settings from the environment, with no service: refused as the flags are, naming the
    /// variables; `source` is not fetch's to choose, so a `source` set for `resolve` changes nothing.
    @Test func theServicesSettingsFromTheEnvironmentNeedAService() async throws {
        let stray = try await Self.run(
            ["http://a.example/", "--dry-run"],
            environment: ["HTTPDNS_ATTEMPT_TIMEOUT_MS": "500", "HTTPDNS_PINS": "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="]
        )
        #expect(stray.status == .exited(2), "\(stray)")
        #expect(
            stray.stderr.contains("--pin (pins, HTTPDNS_PINS), --attempt-timeout-ms (attemptTimeoutMs, HTTPDNS_ATTEMPT_TIMEOUT_MS) concern"),
            "\(stray)"
        )
        for source in ["cares", "system", "doh"] {
            let run = try await Self.run(["http://a.example/", "--dry-run", "--server", "https://127.0.0.1:9"], environment: ["HTTPDNS_SOURCE": source])
            #expect(run.status == .exited(0), "HTTPDNS_SOURCE=\(source): \(run)")
        }
    }

    /// The flags `resolve`, `health` and `fetch` share are declared once (Sources/httpdns/SharedOptions.swift): each
    /// has the same help, as printed, in all three.
    @Test func theSharedFlagsHaveOneHelpText() async throws {
        let commands = ["resolve", "health", "fetch"]
        var helps: [[String: String]] = []
        for command in commands {
            let run = try await ServiceProcess.runCommand(command, ["--help"])
            #expect(run.status == .exited(0), "\(run)")
            helps.append(Self.optionHelp(run.stdout))
        }
        for flag in ["--server", "--server-name", "--cacert", "--pin", "--dns"] {
            let texts = helps.map { $0[flag] }
            for (command, text) in zip(commands, texts) { #expect(text != nil, "\(command) --help has no \(flag)") }
            #expect(Set(texts).count == 1, "\(flag) is helped differently: \(zip(commands, texts).map { "\($0): \($1 ?? "none")" })")
        }
    }

    /// Each option's entry in a `--help`, by its long name: its line and the lines its text wraps onto.
    static func optionHelp(_ help: String) -> [String: String] {
        var entries: [String: String] = [:]
        var current: String?
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  -") {
                current = line.split(separator: " ").first { $0.hasPrefix("--") }.map(String.init)
                if let current { entries[current] = String(line) }
            } else if line.hasPrefix("    "), let name = current {
                entries[name, default: ""] += "\n" + line
            } else {
                current = nil
            }
        }
        return entries
    }
}

/// `httpdns fetch` sending, as a process: resolved by c-ares from a dnsmasq that knows the origin's names, sent to
/// nginx over HTTPS with the names kept, through either adapter.
@Suite("httpdns fetch against nginx, the built executable", .timeLimit(.minutes(2)))
struct FetchSendingTests {
    struct Stage {
        let origin: NginxServer
        let dns: DNSMasqServer
        let certificate: String

        func url(_ name: String, _ path: String) -> String { "https://\(name):\(origin.port)\(path)" }

        func fetch(_ arguments: [String], environment: [String: String] = [:]) async throws -> ChildProcess.Completion {
            try await FetchCommandTests.run(arguments + ["--dns", "\(dns.address)", "--cacert", certificate], environment: environment)
        }
    }

    static func withStage(_ body: (Stage) async throws -> Void) async throws {
        try await TestCertificate.with(subjectAltName: "DNS:a.test,DNS:b.test") { certificate, key in
            try await withNginx(names: ["a.test", "b.test"], certificate: certificate, key: key) { origin in
                let records = ["a.test", "b.test", "c.test"].map { "host-record=\($0),\(origin.address),300" }
                try await withDNSMasq(records: records) { dns in
                    try await body(Stage(origin: origin, dns: dns, certificate: certificate))
                }
            }
        }
    }

    @Test(arguments: ["asynchttpclient", "urlsession"])
    func theBodyGoesToStdoutAndTheNameIsKept(_ adapter: String) async throws {
        try await Self.withStage { stage in
            let run = try await stage.fetch([stage.url("a.test", "/path"), "--adapter", adapter, "-v"])
            #expect(run.status == .exited(0), "\(run)")
            #expect(run.stdout == "sni=a.test host=a.test:\(stage.origin.port)\n")
            #expect(run.stderr.contains("> Host: a.test:\(stage.origin.port)"), "\(run)")
            #expect(run.stderr.contains("< 200"), "\(run)")
            #expect(run.stderr.contains("* cache storage policy: allowedInMemoryOnly"), "\(run)")
            if adapter == "asynchttpclient" {
                #expect(run.stderr.contains("* connected to \(stage.origin.address), SNI a.test"), "\(run)")
            }
        }
    }

    @Test(arguments: ["asynchttpclient", "urlsession"])
    func redirectsAndBodiesGoThroughThePipeline(_ adapter: String) async throws {
        try await Self.withStage { stage in
            let chain = try await stage.fetch([stage.url("a.test", "/redirect/302/b.test/redirect/307/a.test/echo"), "-d", "x=1&y=2", "--adapter", adapter])
            #expect(chain.status == .exited(0), "\(chain)")
            // 302 turns the POST into a GET without its body; the 307 after it keeps that GET.
            #expect(chain.stdout == "method=GET body=", "\(chain)")
            let post = try await stage.fetch([stage.url("b.test", "/redirect/307/a.test/echo"), "-d", "x=1&y=2", "--adapter", adapter])
            #expect(post.stdout == "method=POST body=x=1&y=2", "\(post)")
            let kept = try await stage.fetch([stage.url("a.test", "/redirect/301/b.test/"), "--max-redirects", "0", "--adapter", adapter, "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(kept.stdout.utf8)) as? [String: Any], "\(kept)")
            #expect(object["status"] as? Int == 301)
            // 0 hops: the redirect is the answer, even one that would be refused if followed (https to http).
            let insecure = try await stage.fetch([stage.url("a.test", "/insecure"), "--max-redirects", "0", "--adapter", adapter, "-v"])
            #expect(insecure.status == .exited(0), "\(insecure)")
            #expect(insecure.stderr.contains("< 302"), "\(insecure)")
        }
    }

    @Test func jsonHasTheResponseAndWhereItCameFrom() async throws {
        try await Self.withStage { stage in
            let run = try await stage.fetch([stage.url("b.test", "/x"), "--json"])
            #expect(run.status == .exited(0), "\(run)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
            #expect(object["status"] as? Int == 200)
            #expect(object["connectedAddress"] as? String == stage.origin.address)
            #expect(object["serverName"] as? String == "b.test")
            #expect(object["cacheStoragePolicy"] as? String == "allowedInMemoryOnly")
            #expect(object["body"] as? String == "sni=b.test host=b.test:\(stage.origin.port)\n")
            // Names as received: lowercase over HTTP/2, which nginx speaks here.
            let responseHeaders = (object["responseHeaders"] as? [String: String]) ?? [:]
            #expect(responseHeaders.first { $0.key.lowercased() == "content-type" }?.value == "text/plain", "\(responseHeaders)")
            #expect((object["headers"] as? [String: String])?["Host"] == "b.test:\(stage.origin.port)")
        }
    }

    @Test func failuresExit1SayingWhy() async throws {
        try await Self.withStage { stage in
            let wrong = try await stage.fetch([stage.url("c.test", "/")])
            #expect(wrong.status == .exited(1), "\(wrong)")
            #expect(wrong.stderr.contains("certificate of c.test"), "\(wrong)")
            #expect(wrong.stdout.isEmpty)
            let missing = try await stage.fetch([stage.url("missing.test", "/")])
            #expect(missing.status == .exited(1), "\(missing)")
            #expect(missing.stderr.contains("missing.test could not be resolved"), "\(missing)")
            // The same through a service that is down, set by the flag or the environment (where a `source` set for
            // `resolve` changes nothing): the fallback's NXDOMAIN stands, and says why it was asked.
            let closed = try ClosedTCPPort()
            let service = "https://127.0.0.1:\(closed.port)"
            for (flags, environment) in [(["--server", service], [:]), ([], ["HTTPDNS_SERVERS": service, "HTTPDNS_SOURCE": "cares"])] {
                let down = try await stage.fetch([stage.url("missing.test", "/"), "--fallback", "cares"] + flags, environment: environment)
                #expect(down.status == .exited(1), "\(down)")
                #expect(down.stderr.contains("missing.test does not exist"), "\(down)")
                #expect(down.stderr.contains("cares was asked because the sources before it failed: httpdns: \(service)"), "\(down)")
            }
            // Sent by the origin to a host DNS cannot hold: the origin's fault, exit 1, not bad input.
            let redirected = try await stage.fetch([stage.url("a.test", "/redirect/302/a_b.test/x")])
            #expect(redirected.status == .exited(1), "\(redirected)")
            #expect(redirected.stderr.contains("a_b.test"), "\(redirected)")
        }
    }

    /// 50 MB through stdout without holding it: the process's peak memory grows by far less than the body.
    @Test func aLargeBodyStreamsInBoundedMemory() async throws {
        try cancelUnderASanitizer("httpdns fetch's peak memory")
        try await Self.withStage { stage in
            let small = try await stage.fetch([stage.url("a.test", "/")])
            let large = try await stage.fetch([stage.url("a.test", "/large")])
            #expect(large.status == .exited(0), "\(large.status) \(large.stderr)")
            #expect(large.stdout.utf8.count == NginxServer.largeFileBytes)
            // Holding the body would add at least its 50 MiB. Streaming adds what is in flight (HTTP/2's window,
            // AsyncHTTPClient's buffer) and what the allocator keeps: a few MiB here, up to 34 MiB seen on a loaded
            // machine, whose threads spread the pieces over more malloc arenas.
            let growthKiB = large.maxResidentKiB - small.maxResidentKiB
            #expect(growthKiB < 40 * 1024, "peak memory \(small.maxResidentKiB) KiB for a small body, \(large.maxResidentKiB) KiB for 50 MB")
        }
    }
}
