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

    /// The flags' values, checked by c-ares's own configuration rather than repeated here.
    func validate() throws {
        do {
            try caresConfiguration(servers: []).validate()
        } catch {
            let flag = ["timeoutMs": "--timeout-ms", "tries": "--tries"][error.key] ?? error.key
            throw ValidationError("\(flag) \(error.reason)")
        }
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
