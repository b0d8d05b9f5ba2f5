import ArgumentParser
import Foundation
import HTTPDNSCommandLine
import HTTPDNSCore
import HTTPDNSSettings

#if canImport(Glibc)
    import Glibc
#endif

/// `httpdns health`: whether resolution is healthy and whether the network's DNS is lying, for people and scripts.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Check HTTPDNS services or DNS-over-TLS servers, and DNS servers, and compare their answers for probe names.",
        discussion: """
            Every service (https://, or tls:// for DNS over TLS) and DNS server is asked for every probe name at \
            once, each on its own; a service's certificate is read over a verified connection. Settings come from --config (JSON), then HTTPDNS_… \
            environment variables, then flags; later wins. Every key is in docs/CLI.md. Exit codes: 0 healthy; \
            1 degraded (a source unreachable, a certificate not accepted or close to expiry, plain HTTP) or a \
            hijack suspected; 2 bad input; 3 nothing reachable. With --watch, the checks repeat until interrupted, \
            printing what changed (with --json, one object per round, one per line).
            """
    )

    @Option(help: "A JSON configuration file (also HTTPDNS_CONFIG).")
    var config: String?

    @OptionGroup var service: ServiceOptions

    @OptionGroup var dns: DNSOptions

    @Option(name: .customLong("host"), help: "A probe name asked of every source; repeatable (default example.com).")
    var hosts: [String] = []

    @Option(name: .customLong("allow-private"), help: "Names whose private answers are expected (a name, or .example.com for every name under it); repeatable.")
    var allowPrivate: [String] = []

    @Option(name: .customLong("timeout-ms"), help: "How long each probe may take, in milliseconds (default 2000).")
    var timeoutMs: String?

    @Option(name: .customLong("warn-days"), help: "A certificate expiring within this many days is degraded (default 14).")
    var warnDays: String?

    @Option(name: .customLong("watch"), help: "Repeat every SECONDS until interrupted, printing what changed.")
    var watch: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func run() async throws {
        let settings = try await readSettings()
        let dnsServers = settings.dnsServers.isEmpty ? Self.systemDNSServers() : settings.dnsServers
        guard settings.service != nil || settings.dot != nil || !dnsServers.isEmpty else {
            Output.diagnostic("httpdns health: nothing to check: name a service with --server or a DNS server with --dns (none in /etc/resolv.conf)")
            throw ExitCode(ExitStatus.usage)
        }
        let check: HealthCheck
        do {
            check = try await HealthCheck(settings: settings, dnsServers: dnsServers)
        } catch {
            Output.diagnostic("httpdns health: \(error)")
            throw ExitCode(ExitStatus.usage)
        }
        let colour = !settings.json && isatty(1) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        var report = await check.run()
        print(settings.json ? report.json.text : report.text(colour: colour))
        if let interval = settings.watch {
            while true {
                fflush(nil)
                try? await Task.sleep(for: interval)
                let next = await check.run()
                if settings.json {
                    print(next.json.text)
                } else {
                    let time = Self.clockTime()
                    for change in next.changes(since: report) { print("\(time)  \(change)") }
                    let tone: Tone = next.status == .healthy ? .good : next.status == .degraded ? .warning : .bad
                    print("\(time)  \(Paint(enabled: colour)(next.summary, tone))")
                }
                report = next
            }
        }
        await check.shutdown()
        let status = report.status
        if status.exitCode != ExitStatus.success { throw ExitCode(status.exitCode) }
    }

    /// The flags over the environment over the file, checked: a bad setting ends the command with exit code 2.
    private func readSettings() async throws -> HealthSettings {
        var flags: [String: [String]] = [:]
        service.add(to: &flags)
        dns.add(to: &flags)
        flags[HealthSettings.hosts.key] = hosts.isEmpty ? nil : hosts
        flags[HealthSettings.allowPrivate.key] = allowPrivate.isEmpty ? nil : allowPrivate
        flags[HealthSettings.timeoutMs.key] = timeoutMs.map { [$0] }
        flags[HealthSettings.expiryWarningDays.key] = warnDays.map { [$0] }
        flags[HealthSettings.watchSeconds.key] = watch.map { [$0] }
        flags[HealthSettings.json.key] = json ? ["true"] : nil
        let environment = ProcessInfo.processInfo.environment
        do {
            let reader = try SettingsReader(
                settings: HealthSettings.table,
                file: config ?? environment["HTTPDNS_CONFIG"],
                environment: environment,
                flags: flags
            )
            return try await HealthSettings(reading: reader)
        } catch {
            Output.diagnostic("httpdns health: \(error)")
            throw ExitCode(ExitStatus.usage)
        }
    }

    /// The `nameserver` lines of /etc/resolv.conf that name an address c-ares can ask.
    static func systemDNSServers(path: String = "/etc/resolv.conf") -> [DNSServerAddress] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver" else { return nil }
            return try? DNSServerAddress(parsing: String(words[1]))
        }
    }

    /// `HH:MM:SS` local time, for the lines of `--watch`.
    private static func clockTime() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }
}
