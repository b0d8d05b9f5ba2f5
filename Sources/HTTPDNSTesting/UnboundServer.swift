import Foundation
import HTTPDNSCore

/// Debian's unbound, started on a free 127.0.0.x address and port with local zones and no network: for the tests
/// that need what dnsmasq does not give, such as the SOA of a negative answer (RFC 2308).
public final class UnboundServer: Sendable {
    public let address: DNSServerAddress
    private let process: ChildProcess
    private let directory: URL

    /// Starts unbound answering from `lines` (`local-zone:` and `local-data:` lines of its server section).
    public static func start(lines: [String]) async throws -> UnboundServer {
        try await LoopbackPeer.start { address, port in try await UnboundServer(ip: address, port: port, lines: lines) }
    }

    private init(ip: String, port: Int, lines: [String]) async throws {
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
            ] + lines
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
    }

    /// Stops unbound and removes its files.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with an unbound answering from `lines`, and stops it afterwards, however `body` ends.
public func withUnbound<T>(lines: [String], _ body: (UnboundServer) async throws -> T) async throws -> T {
    try await LoopbackPeer.run(try await UnboundServer.start(lines: lines), stop: { $0.stop() }, body)
}
