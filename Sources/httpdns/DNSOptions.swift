import ArgumentParser
import HTTPDNSCAres
import HTTPDNSCore

/// The options that choose and tune the plain DNS servers c-ares asks.
struct DNSOptions: ParsableArguments {
    @Option(name: .customLong("dns"), help: "A DNS server for c-ares, IP[:PORT] ([IPv6]:PORT); repeatable. Default: /etc/resolv.conf.")
    var serverTexts: [String] = []

    @Flag(help: "Ask the DNS servers over TCP instead of UDP.")
    var tcp = false

    @Option(name: .customLong("timeout-ms"), help: "First-try timeout per server, in milliseconds.")
    var timeoutMs: Int = 1000

    @Option(help: "Tries per server.")
    var tries: Int = 2

    func validate() throws {
        guard timeoutMs > 0 else { throw ValidationError("--timeout-ms must be a positive number of milliseconds") }
        guard tries > 0 else { throw ValidationError("--tries must be at least 1") }
    }

    /// The parsed `--dns` servers; a bad one ends the command with exit code 2.
    func servers() throws -> [DNSServerAddress] {
        do {
            return try serverTexts.map { try DNSServerAddress(parsing: $0) }
        } catch {
            Output.diagnostic("httpdns: \(error)")
            throw ExitCode(ExitStatus.usage)
        }
    }

    func caresConfiguration(servers: [DNSServerAddress]) -> CAresSource.Configuration {
        var configuration = CAresSource.Configuration(servers: servers, transport: tcp ? .tcp : .udp)
        configuration.timeoutMs = timeoutMs
        configuration.tries = tries
        return configuration
    }
}
