import Foundation
import Glibc
import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSTesting
import Testing

/// `httpdns serve` as a real process on loopback, with a real dnsmasq upstream, exercised by clients no one here
/// wrote: curl (plain, HTTP/2, and as a DoH client), kdig over DoH, nghttp and h2load (nghttp2), and promtool on
/// /metrics.
@Suite("httpdns serve, live on loopback", .timeLimit(.minutes(1)))
struct ServeLiveTests {
    /// A certificate made now for 127.0.0.1 and serve.test, in a directory removed afterwards.
    static func withCertificate<T>(_ body: (_ certificate: String, _ key: String) async throws -> T) async throws -> T {
        try await TestCertificate.with(subjectAltName: "IP:127.0.0.1,DNS:serve.test", body)
    }

    static func tool(_ name: String) throws -> String {
        try #require(ChildProcess.find(name), "\(name) is missing: run scripts/install-deps.sh")
    }

    /// Runs a shell pipeline (for `curl … | promtool …`).
    static func shell(_ script: String) async throws -> ChildProcess.Completion {
        try await ChildProcess.run(executable: "/bin/sh", arguments: ["-c", script])
    }

    @Test func plainHTTPAnswersTheNativeAPI() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            let server = try await ServiceProcess.start(["--upstream", dns.address.description])
            defer { server.stop() }
            let curl = try await ChildProcess.run(
                executable: try Self.tool("curl"),
                arguments: ["-s", "-i", "http://127.0.0.1:\(server.port)/d?host=serve.test&query=4,6"]
            )
            #expect(curl.status == .exited(0))
            #expect(curl.stdout.hasPrefix("HTTP/1.1 200"))
            #expect(curl.stdout.lowercased().contains("cache-control: max-age=300"))
            #expect(curl.stdout.hasSuffix(#"{"host":"serve.test","ips":["127.0.0.1"],"ipsv6":["::1"],"ttl":300,"origin_ttl":300}"#))
            let ready = try await ChildProcess.run(
                executable: try Self.tool("curl"),
                arguments: ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/readyz"]
            )
            #expect(ready.stdout == "200")
            #expect(server.stop() == .exited(0))
        }
    }

    @Test func overTLSCurlSpeaksHTTP2AndUsesTheServiceAsItsDoHResolver() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            try await Self.withCertificate { certificate, key in
                let server = try await ServiceProcess.start(["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key])
                defer { server.stop() }
                let h2 = try await ChildProcess.run(
                    executable: try Self.tool("curl"),
                    arguments: [
                        "-s", "--cacert", certificate, "--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                        "https://127.0.0.1:\(server.port)/d?host=serve.test",
                    ]
                )
                #expect(h2.stdout == "2 200")
                // curl resolves serve.test through the service (RFC 8484), then connects to the answer,
                // 127.0.0.1, which is this same service, verifying its certificate for serve.test.
                let doh = try await ChildProcess.run(
                    executable: try Self.tool("curl"),
                    arguments: [
                        "-s", "--cacert", certificate, "--doh-url", "https://127.0.0.1:\(server.port)/dns-query",
                        "https://serve.test:\(server.port)/healthz",
                    ]
                )
                #expect(doh.status == .exited(0), "\(doh)")
                #expect(doh.stdout == #"{"status":"ok"}"#)
            }
        }
    }

    /// The same request twice on one connection: a miss through the router, then a hit answered on the event
    /// loop. curl must see the same response both times, over plain HTTP/1.1, TLS with HTTP/1.1, and HTTP/2.
    @Test func aHitOnTheEventLoopAnswersAsTheRouterDid() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            try await Self.withCertificate { certificate, key in
                let plain = try await ServiceProcess.start(["--upstream", dns.address.description])
                defer { plain.stop() }
                let tls = try await ServiceProcess.start(["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key])
                defer { tls.stop() }
                let paths = ["/d?host=serve.test&query=4,6", "/dns-query?name=serve.test&type=AAAA"]
                let clients: [(String, [String])] = [
                    ("http://127.0.0.1:\(plain.port)", ["--http1.1"]),
                    ("https://127.0.0.1:\(tls.port)", ["--http1.1", "--cacert", certificate]),
                    ("https://127.0.0.1:\(tls.port)", ["--http2", "--cacert", certificate]),
                ]
                for (base, options) in clients {
                    for path in paths {
                        let url = base + path
                        // -w marks where each response ends; curl reuses the connection for the second URL.
                        let curl = try await ChildProcess.run(
                            executable: try Self.tool("curl"),
                            arguments: ["-s", "-i", "-w", "\n<%{num_connects}>\n"] + options + [url, url]
                        )
                        #expect(curl.status == .exited(0), "\(url) \(options): \(curl)")
                        let responses = curl.stdout.components(separatedBy: "\n<").dropLast()
                        try #require(responses.count == 2, "\(curl.stdout)")
                        #expect(curl.stdout.hasSuffix("<0>\n"), "the second request reused the connection")
                        let (miss, hit) = (Self.normalized(responses[responses.startIndex]), Self.normalized(responses[responses.startIndex + 1]))
                        #expect(hit == miss, "\(url) \(options)")
                        #expect(hit.status.hasPrefix("HTTP/2 200"), "\(hit.status)")
                    }
                }
            }
        }
    }

    /// A response as curl -i printed it: the status line, the headers that must match (names in lowercase), and
    /// the body, with TTLs left out (a second may pass between the two requests).
    static func normalized(_ response: String) -> (status: String, headers: [String], body: String) {
        let text = response.hasPrefix("0>\n") || response.hasPrefix("1>\n") ? String(response.dropFirst(3)) : response
        let parts = text.components(separatedBy: "\r\n\r\n")
        let lines = parts[0].components(separatedBy: "\r\n")
        let kept = ["content-type", "content-length"]
        let headers = lines.dropFirst().map { $0.lowercased() }.filter { line in kept.contains { line.hasPrefix($0 + ":") } }.sorted()
        let body = parts.dropFirst().joined(separator: "\r\n\r\n")
            .replacingOccurrences(of: #""(ttl|TTL)":\d+"#, with: "ttl", options: .regularExpression)
        return (lines[0].replacingOccurrences(of: "HTTP/1.1", with: "HTTP/2"), headers, body)
    }

    @Test func kdigResolvesOverDoH() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            try await Self.withCertificate { certificate, key in
                let server = try await ServiceProcess.start(["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key])
                defer { server.stop() }
                for (name, type, expected) in [("serve.test", "A", "127.0.0.1"), ("serve.test", "AAAA", "::1"), ("missing.test", "A", "NXDOMAIN")] {
                    let kdig = try await ChildProcess.run(
                        executable: try Self.tool("kdig"),
                        arguments: ["@127.0.0.1", "-p", "\(server.port)", "+https=/dns-query", "+tls-ca=\(certificate)", name, type]
                    )
                    #expect(kdig.status == .exited(0), "\(kdig)")
                    #expect(kdig.stdout.contains("HTTP/2"), "\(kdig.stdout)")
                    #expect(kdig.stdout.contains(expected), "\(kdig.stdout)")
                }
            }
        }
    }

    @Test func metricsPassPromtool() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            let server = try await ServiceProcess.start(["--upstream", dns.address.description])
            defer { server.stop() }
            let base = "http://127.0.0.1:\(server.port)"
            // Some traffic first, so every kind of metric has samples: hits, misses, negatives, a rejection.
            for path in ["/d?host=serve.test", "/d?host=serve.test", "/d?host=missing.test", "/d?host=bad_name", "/dns-query?name=other.test"] {
                _ = try await ChildProcess.run(executable: try Self.tool("curl"), arguments: ["-s", "-o", "/dev/null", base + path])
            }
            let metrics = try await ChildProcess.run(executable: try Self.tool("curl"), arguments: ["-s", base + "/metrics"])
            for name in [
                "http_server_request_duration_seconds_bucket", "httpdns_cache_lookups_total", "httpdns_resolutions_total",
                "httpdns_server_rejected_total",
            ] {
                #expect(metrics.stdout.contains(name), "\(name) missing from /metrics")
            }
            #expect(!metrics.stdout.contains("serve.test"), "a host name leaked into a metric dimension")
            let check = try await Self.shell("'\(try Self.tool("curl"))' -s \(base)/metrics | '\(try Self.tool("promtool"))' check metrics")
            #expect(check.status == .exited(0), "promtool: \(check.stdout) \(check.stderr)")
        }
    }

    /// SIGTERM while a request waits on a silent upstream: the service stops accepting, answers the request it
    /// has (here 503 once the upstream times out), and exits 0. Over HTTP/1.1, and over HTTP/2, where the
    /// connection is told GOAWAY and closes after the stream in flight.
    @Test(arguments: ["http/1.1", "h2"])
    func sigtermLetsTheRequestInFlightFinish(_ version: String) async throws {
        let silent = try SilentUDPServer()
        defer { silent.close() }
        try await Self.withCertificate { certificate, key in
            let tls = version == "h2" ? ["--tls-cert", certificate, "--tls-key", key] : []
            let server = try await ServiceProcess.start(["--upstream", "127.0.0.1:\(silent.port)"] + tls)
            let client = version == "h2" ? ["--http2", "--cacert", certificate, "https"] : ["--http1.1", "http"]
            let request = Task {
                try await ChildProcess.run(
                    executable: try Self.tool("curl"),
                    arguments: ["-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}"] + client.dropLast()
                        + ["\(client.last!)://127.0.0.1:\(server.port)/d?host=slow.test"]
                )
            }
            // The upstream query arriving at the silent server proves the request is in flight inside the service.
            try await silent.waitForDatagram(timeoutMs: 10_000)
            let termination = server.stop()
            let response = try await request.value
            #expect(termination == .exited(0))
            #expect(response.status == .exited(0), "curl: \(response)")
            #expect(response.stdout == (version == "h2" ? "503 2" : "503 1.1"))
        }
    }

    /// A client that connects over TLS and never sends its ClientHello holds nothing past SIGTERM: the service
    /// closes the connection at once and exits 0 (before, its shutdown waited on the handshake for ever).
    @Test func aClientSilentBeforeItsHandshakeDoesNotHoldUpShutdown() async throws {
        try await Self.withCertificate { certificate, key in
            let server = try await ServiceProcess.start(["--upstream", "127.0.0.1:9", "--tls-cert", certificate, "--tls-key", key])
            let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(silent >= 0)
            defer { close(silent) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(server.port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(silent, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(connected == 0)
            // The service accepts in order, so once a later connection is answered, the silent one is accepted too.
            let later = try await ChildProcess.run(
                executable: try Self.tool("curl"),
                arguments: ["-s", "--cacert", certificate, "-o", "/dev/null", "-w", "%{http_code}", "https://127.0.0.1:\(server.port)/healthz"]
            )
            #expect(later.stdout == "200", "\(later)")
            // Killed with SIGKILL, had it still been waiting 10 s later.
            #expect(server.stop() == .exited(0))
        }
    }

    /// Over HTTP/2, what the router answers (misses, errors, POST bodies) comes back as over HTTP/1.1.
    @Test func http2StreamsReachTheRouter() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            try await Self.withCertificate { certificate, key in
                let server = try await ServiceProcess.start(["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key])
                defer { server.stop() }
                let base = "https://127.0.0.1:\(server.port)"
                func curl(_ arguments: [String]) async throws -> String {
                    let run = try await ChildProcess.run(
                        executable: try Self.tool("curl"),
                        arguments: ["-s", "--http2", "--cacert", certificate, "-w", " %{http_code} %{http_version}"] + arguments
                    )
                    #expect(run.status == .exited(0), "\(arguments): \(run)")
                    return run.stdout
                }
                let bad = try await curl([base + "/d?host=bad_name"])
                #expect(bad.hasPrefix(#"{"code":"InvalidHost""#) && bad.hasSuffix(" 400 2"), "\(bad)")
                let missing = try await curl([base + "/nowhere"])
                #expect(missing == " 404 2")
                // A DoH POST: the body reaches the route; one byte over the limit is refused by it.
                // ID 0, RD, one question: serve.test A IN.
                let query =
                    Data([0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5]) + Data("serve".utf8) + Data([4]) + Data("test".utf8)
                    + Data([0, 0, 1, 0, 1])
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-post-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                try query.write(to: directory.appendingPathComponent("query"))
                try Data(count: 65_536).write(to: directory.appendingPathComponent("large"))
                let post = ["-H", "Content-Type: application/dns-message", "-o", "/dev/null"]
                let answered = try await curl(post + ["--data-binary", "@\(directory.path)/query", base + "/dns-query"])
                #expect(answered == " 200 2")
                let tooLarge = try await curl(post + ["--data-binary", "@\(directory.path)/large", base + "/dns-query"])
                #expect(tooLarge == " 413 2")
                let headers = try await curl(["-D", "-", "-o", "/dev/null", base + "/healthz"])
                #expect(headers.lowercased().contains("\r\ndate: "), "\(headers)")
            }
        }
    }

    /// The service's own HTTP/2 connection against nghttp2's clients: nghttp with a 1 KiB stream window (so a
    /// response goes out in window-sized DATA frames as WINDOW_UPDATEs arrive), and h2load with many streams at
    /// once on a few connections, hits and router answers mixed.
    @Test func nghttp2ClientsGetEveryByteWithinTheirWindows() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            try await Self.withCertificate { certificate, key in
                // No rate limit: h2load sends thousands of requests from one address.
                let server = try await ServiceProcess.start(
                    ["--upstream", dns.address.description, "--tls-cert", certificate, "--tls-key", key],
                    environment: ["HTTPDNS_RATE_LIMIT_PER_SECOND": "0"]
                )
                defer { server.stop() }
                let base = "https://127.0.0.1:\(server.port)"
                // -w 10: each stream's window is 1,023 bytes; /metrics is several times that.
                let nghttp = try await ChildProcess.run(
                    executable: try Self.tool("nghttp"),
                    arguments: ["-v", "-n", "-w", "10", "-W", "16", base + "/metrics"]
                )
                #expect(nghttp.status == .exited(0), "\(nghttp.stderr)")
                let lengths = nghttp.stdout.matches(of: /recv DATA frame <length=(\d+)/).map { Int($0.1)! }
                let declared = nghttp.stdout.firstMatch(of: /content-length: (\d+)/).map { Int($0.1)! }
                #expect(lengths.count > 1, "the body is split by the window")
                #expect(lengths.allSatisfy { $0 <= 1_023 }, "no DATA frame larger than the stream's window: \(lengths)")
                #expect(lengths.reduce(0, +) == declared, "every byte arrives")
                #expect(nghttp.stdout.contains("send WINDOW_UPDATE"))

                // ID 0, RD, one question: serve.test A IN, base64url.
                let doh = base + "/dns-query?dns=AAABAAABAAAAAAAABXNlcnZlBHRlc3QAAAEAAQ"
                let h2load = try await ChildProcess.run(
                    executable: try Self.tool("h2load"),
                    arguments: ["-n", "3000", "-c", "4", "-m", "20", doh, base + "/d?host=serve.test", base + "/healthz"]
                )
                #expect(h2load.status == .exited(0), "\(h2load.stderr)")
                #expect(h2load.stdout.contains("3000 succeeded, 0 failed, 0 errored, 0 timeout"), "\(h2load.stdout)")
                #expect(h2load.stdout.contains("status codes: 3000 2xx"), "\(h2load.stdout)")
            }
        }
    }

    /// Flags override the environment, which overrides the file.
    @Test func settingsPrecedence() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-\(UUID().uuidString).json").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            try #"{"maxHostsPerBatch": 1, "listen": "not even an address", "rateLimitPerSecond": 0}"#
                .write(toFile: file, atomically: true, encoding: .utf8)
            // The environment replaces the file's batch size; the --listen flag (from start) replaces both the
            // file's and the environment's invalid listen address, so the service starts.
            let server = try await ServiceProcess.start(
                ["--config", file, "--upstream", dns.address.description],
                environment: ["HTTPDNS_MAX_HOSTS_PER_BATCH": "2", "HTTPDNS_LISTEN": "nonsense"]
            )
            defer { server.stop() }
            func status(_ hosts: String) async throws -> String {
                try await ChildProcess.run(
                    executable: try Self.tool("curl"),
                    arguments: ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/resolve?host=\(hosts)"]
                ).stdout
            }
            #expect(try await status("serve.test,other.test") == "200")
            #expect(try await status("serve.test,other.test,serve.test") == "400")
        }
    }

    /// The cache and the upstream are tuned from the service's settings: here the TTL ceiling.
    @Test func cacheSettingsReachTheCache() async throws {
        try await withDNSMasq(records: ServiceTestRecords.lines) { dns in
            let server = try await ServiceProcess.start(
                ["--upstream", dns.address.description],
                environment: ["HTTPDNS_CACHE_MAX_TTL_SECONDS": "100", "HTTPDNS_UPSTREAM_TIMEOUT_MS": "500", "HTTPDNS_UPSTREAM_TRIES": "1"]
            )
            defer { server.stop() }
            let curl = try await ChildProcess.run(
                executable: try Self.tool("curl"),
                arguments: ["-s", "http://127.0.0.1:\(server.port)/d?host=serve.test"]
            )
            #expect(curl.stdout == #"{"host":"serve.test","ips":["127.0.0.1"],"ttl":100,"origin_ttl":300}"#)
        }
    }

    @Test func invalidSettingsStopStartUpNamingTheKey() async throws {
        let httpdns = try ServiceProcess.executablePath()
        let badListen = try await ChildProcess.run(executable: httpdns, arguments: ["serve", "--listen", "nonsense"])
        #expect(badListen.status == .exited(2))
        #expect(badListen.stderr.contains("listen"))

        let badEnvironment = try await Self.shell("HTTPDNS_RATE_LIMIT_PER_SECOND=-1 '\(httpdns)' serve")
        #expect(badEnvironment.status == .exited(2))
        #expect(badEnvironment.stderr.contains("HTTPDNS_RATE_LIMIT_PER_SECOND"))

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try #"{"listen": "127.0.0.1:0", "maxHostsPerBach": 3}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let badFile = try await ChildProcess.run(executable: httpdns, arguments: ["serve", "--config", file])
        #expect(badFile.status == .exited(2))
        #expect(badFile.stderr.contains("maxHostsPerBach"))

        let clamps = try await Self.shell(
            "HTTPDNS_CACHE_MIN_TTL_SECONDS=600 HTTPDNS_CACHE_MAX_TTL_SECONDS=60 '\(httpdns)' serve"
        )
        #expect(clamps.status == .exited(2))
        #expect(clamps.stderr.contains("cacheMinTTLSeconds"))

        let halfTLS = try await ChildProcess.run(executable: httpdns, arguments: ["serve", "--tls-cert", file])
        #expect(halfTLS.status == .exited(2))
        #expect(halfTLS.stderr.contains("tlsKey"))

        // Account entries are checked as strictly as the rest: a mistyped key or a quoted boolean is refused.
        for (entry, fragment) in [
            (#"{"accounts": {"app": {"secret": "x", "requireSignatur": false}}}"#, "requireSignatur"),
            (#"{"accounts": {"app": {"secret": "x", "requireSignature": "false"}}}"#, "requireSignature"),
        ] {
            try entry.write(toFile: file, atomically: true, encoding: .utf8)
            let badAccount = try await ChildProcess.run(executable: httpdns, arguments: ["serve", "--config", file])
            #expect(badAccount.status == .exited(2))
            #expect(badAccount.stderr.contains(fragment), "\(badAccount.stderr)")
        }

        // Readable files that are not PEM: refused before listening, naming the file.
        let notPEM = try await ChildProcess.run(executable: httpdns, arguments: ["serve", "--tls-cert", file, "--tls-key", file])
        #expect(notPEM.status == .exited(2))
        #expect(notPEM.stderr.contains("tlsCert"))
    }
}

/// A UDP socket on 127.0.0.1 that receives and never answers: an upstream that times out.
final class SilentUDPServer: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(socketFD >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) } }
        try #require(bound == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) } }
        fd = socketFD
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Waits until a datagram arrives (and reads it), or fails after `timeoutMs`. The wait blocks a thread of its
    /// own, not one of the few that run the tests' tasks (the clients whose query it waits for among them).
    func waitForDatagram(timeoutMs: Int32) async throws {
        let fd = self.fd
        let arrived = await withCheckedContinuation { continuation in
            Thread {
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&descriptor, 1, timeoutMs) == 1
                if ready {
                    var buffer = [UInt8](repeating: 0, count: 2048)
                    _ = recv(fd, &buffer, buffer.count, 0)
                }
                continuation.resume(returning: ready)
            }.start()
        }
        try #require(arrived, "no query reached the silent upstream")
    }

    func close() { Glibc.close(fd) }
}
