import Foundation
import HTTPDNSCore

/// A real dnsmasq (Debian's `dnsmasq-base`) serving test records on a 127.0.0.x address and a high port.
///
/// Every query is logged to a file, one line per query, written before the answer is sent (dnsmasq is single
/// threaded and logs with plain `write(2)`), so once a lookup has returned, its queries are in the log.
public final class DNSMasqServer: Sendable {
    /// The address and port the server answers on.
    public let address: DNSServerAddress
    private let process: ChildProcess
    private let directory: URL
    private let queryLog: URL

    /// Starts dnsmasq answering for `records` (dnsmasq option lines such as `host-record=a.test,192.0.2.1,60`).
    /// Every name under `test.` that has no record is answered NXDOMAIN.
    public static func start(records: [String]) async throws -> DNSMasqServer {
        try await LoopbackPeer.start { address, port in try await DNSMasqServer(ip: address, port: UInt16(port), records: records) }
    }

    /// Starts dnsmasq for `records` on `address`, which a test picked before: to restart an upstream where it was.
    /// Throws ``PeerStartError`` when the address is taken meanwhile.
    public static func start(records: [String], at address: DNSServerAddress) async throws -> DNSMasqServer {
        try await DNSMasqServer(ip: "\(address.ip)", port: address.port, records: records)
    }

    private init(ip: String, port: UInt16, records: [String]) async throws {
        guard let executable = ChildProcess.find("dnsmasq") else {
            throw PeerStartError(
                description: "dnsmasq is not installed: run the install command at the top of README.md (apt-get install dnsmasq-base)",
                retryable: false
            )
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-dnsmasq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        queryLog = directory.appendingPathComponent("queries.log")
        let configuration =
            [
                "port=\(port)",
                "listen-address=\(ip)",
                "bind-interfaces",
                "no-resolv",
                "no-hosts",
                "no-poll",
                "user=root",
                "local=/test/",
                "log-queries",
                "log-facility=\(queryLog.path)",
                "pid-file=",
            ] + records
        let configFile = directory.appendingPathComponent("dnsmasq.conf")
        try (configuration.joined(separator: "\n") + "\n").write(to: configFile, atomically: true, encoding: .utf8)

        process = try ChildProcess(executable: executable, arguments: ["--no-daemon", "--conf-file=\(configFile.path)"])
        // dnsmasq binds its sockets before it logs "started"; it exits at once when it cannot bind.
        let (started, output) = await process.waitForStderr(containing: "started")
        guard started else {
            process.stop(signal: SIGKILL)
            try? FileManager.default.removeItem(at: directory)
            throw PeerStartError(description: "dnsmasq did not start: \(output)", retryable: output.contains("in use"))
        }
        process.discardStderr()
        address = DNSServerAddress(ip: IPAddress(ip)!, port: port)
    }

    /// How many queries of `type` (`A`, `AAAA`) for `name` the server has received.
    public func queryCount(_ name: String, type: String) throws -> Int {
        let log = (try? String(contentsOf: queryLog, encoding: .utf8)) ?? ""
        let needle = "query[\(type)] \(name) from"
        return log.split(separator: "\n").filter { $0.contains(needle) }.count
    }

    /// Stops dnsmasq and removes its files.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with a dnsmasq serving `records`, and stops it afterwards whatever happens.
public func withDNSMasq<T>(records: [String], _ body: (DNSMasqServer) async throws -> T) async throws -> T {
    try await LoopbackPeer.run(try await DNSMasqServer.start(records: records), stop: { $0.stop() }, body)
}
