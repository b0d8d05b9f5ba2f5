import Foundation
import HTTPDNSCore

/// Debian's unbound, started on a free 127.0.0.x address and port with local zones and no network: for the tests
/// that need what dnsmasq does not give, such as the SOA of a negative answer (RFC 2308), DNS over TLS and DNS over
/// HTTPS.
public final class UnboundServer: Sendable {
    /// The certificate and key unbound serves DoT and DoH with (PEM files), and the path of its DoH endpoint.
    public struct TLS: Sendable {
        public var certificate: String
        public var key: String
        /// Where DoH is served. Default `/dns-query`.
        public var httpEndpoint = "/dns-query"

        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// Plain DNS, over UDP and TCP.
    public let address: DNSServerAddress
    /// DNS over TLS (RFC 7858) on the same address, when started with TLS.
    public let tlsPort: Int?
    /// DNS over HTTPS (RFC 8484, HTTP/2) on the same address, when started with TLS.
    public let httpsPort: Int?
    private let process: ChildProcess
    private let directory: URL

    /// Starts unbound answering from `lines` (`local-zone:` and `local-data:` lines of its server section).
    /// With `tls`, it also serves DoT and DoH on the next two ports of the same address.
    /// With `ip`, on that address (another port on a collision), else on a random 127.0.0.x.
    public static func start(at ip: String? = nil, lines: [String], tls: TLS? = nil) async throws -> UnboundServer {
        try await LoopbackPeer.start { address, port in try await UnboundServer(ip: ip ?? address, port: port, lines: lines, tls: tls) }
    }

    private init(ip: String, port: Int, lines: [String], tls: TLS?) async throws {
        guard let executable = ChildProcess.find("unbound") else {
            throw PeerStartError(description: "unbound is not installed: run scripts/install-deps.sh", retryable: false)
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-unbound-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configuration =
            [
                "server:",
                "interface: \(ip)@\(port)",
                "port: \(port)",
                "do-daemonize: no",
                #"chroot: """#,
                #"username: """#,
                "directory: \"\(directory.path)\"",
                #"pidfile: """#,
                "use-syslog: no",
                #"logfile: """#,
                "verbosity: 1",
                "access-control: 127.0.0.0/8 allow",
                // Local answers only: no recursion, no DNSSEC trust anchor to read.
                #"module-config: "iterator""#,
                "do-ip6: no",
            ] + Self.tlsLines(ip: ip, port: port, tls: tls) + lines
        let file = directory.appendingPathComponent("unbound.conf")
        try configuration.map { $0 == "server:" ? $0 : "    " + $0 }.joined(separator: "\n").appending("\n").write(to: file, atomically: true, encoding: .utf8)
        process = try ChildProcess(executable: executable, arguments: ["-d", "-c", file.path])
        // unbound logs "start of service" once its sockets are bound; it exits at once when it cannot bind.
        let (started, output) = await process.waitForStderr(containing: "start of service")
        guard started else {
            process.stop(signal: SIGKILL)
            try? FileManager.default.removeItem(at: directory)
            throw PeerStartError(description: "unbound did not start: \(output)", retryable: output.contains("in use") || output.contains("could not open"))
        }
        process.discardStderr()
        address = DNSServerAddress(ip: IPAddress(ip)!, port: UInt16(port))
        tlsPort = tls == nil ? nil : port + 1
        httpsPort = tls == nil ? nil : port + 2
    }

    /// DoT on `port + 1` and DoH on `port + 2`: an `interface:` line each, and which of them speaks what.
    private static func tlsLines(ip: String, port: Int, tls: TLS?) -> [String] {
        guard let tls else { return [] }
        return [
            "interface: \(ip)@\(port + 1)",
            "interface: \(ip)@\(port + 2)",
            "tls-port: \(port + 1)",
            "https-port: \(port + 2)",
            "tls-service-key: \"\(tls.key)\"",
            "tls-service-pem: \"\(tls.certificate)\"",
            "http-endpoint: \"\(tls.httpEndpoint)\"",
            // Plain HTTP/2 over TLS, as RFC 8484 clients speak it.
            "http-notls-downstream: no",
        ]
    }

    /// Stops unbound and removes its files.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with an unbound answering from `lines`, and stops it afterwards, however `body` ends.
public func withUnbound<T>(
    at ip: String? = nil,
    lines: [String],
    tls: UnboundServer.TLS? = nil,
    _ body: (UnboundServer) async throws -> T
) async throws -> T {
    try await LoopbackPeer.run(try await UnboundServer.start(at: ip, lines: lines, tls: tls), stop: { $0.stop() }, body)
}
