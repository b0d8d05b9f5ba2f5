import ArgumentParser
import Foundation
import HTTPDNSCAres
import HTTPDNSClient
import HTTPDNSCommandLine
import HTTPDNSCore
import HTTPDNSSettings
import HTTPDNSWire

/// `httpdns resolve HOST`: one lookup, printed for people or as JSON.
struct ResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve a host name through an HTTPDNS service, DoH, DNS over TLS, c-ares, the system resolver, or the policy over them.",
        discussion: """
            Settings come from --config (JSON), then HTTPDNS_… environment variables, then flags; later wins. \
            Every key is in docs/CLI.md. Exit codes: 0 answered; 1 the name has no address (NXDOMAIN or no data), \
            or the only answer was refused by the hijack guard; 2 bad input; 3 nothing could be reached or none \
            gave an answer.
            """
    )

    @Argument(help: "The host name to resolve.")
    var host: String

    @Option(help: "A JSON configuration file (also HTTPDNS_CONFIG).")
    var config: String?

    @Option(
        help: """
            auto (the policy: the service, or the tls:// servers, then the fallbacks), httpdns (native API), doh, \
            dot (DNS over TLS to tls:// servers), cares or system (default cares).
            """
    )
    var source: String?

    @OptionGroup var service: ServiceOptions

    @OptionGroup var timing: ServiceTimingOptions

    @OptionGroup var fallback: FallbackOptions

    @OptionGroup var dns: DNSOptions

    @Option(name: .customLong("timeout-ms"), help: "c-ares's first-try timeout per server, in milliseconds (default 1000).")
    var timeoutMs: String?

    @Option(help: "c-ares's tries per server (default 2).")
    var tries: String?

    @Option(name: .customLong("type"), help: "A, AAAA or ANY (both; the default).")
    var recordType: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func run() async throws {
        let hostName: HostName
        do {
            hostName = try HostName(host)
        } catch {
            Output.diagnostic("httpdns: \(error)")
            throw ExitCode(ExitStatus.usage)
        }
        let settings = try await readSettings()
        let sources: Sources
        do {
            sources = try await Sources.make(settings)
        } catch {
            // A service or c-ares configuration the libraries refuse (a --cacert that is not PEM, an unreadable
            // resolv.conf).
            Output.diagnostic("httpdns: \(error)")
            throw ExitCode(ExitStatus.usage)
        }
        let stopwatch = Stopwatch()
        let result: Result<HostResolver.Answer, ResolutionError>
        do {
            result = .success(try await sources.resolve(hostName, families: settings.families))
        } catch let error as ResolutionError {
            result = .failure(error)
        } catch {
            // Nothing else is thrown by the sources; but whatever it is, the sources are shut down first.
            result = .failure(ResolutionError(.internalError, "\(error)"))
        }
        let durationMs = Double(stopwatch.elapsedNanoseconds) / 1_000_000
        await sources.shutdown()

        switch result {
        case .success(let answer):
            print(settings.json ? Self.json(answer, durationMs: durationMs).text : Self.text(answer, durationMs: durationMs))
        case .failure(let error):
            if settings.json {
                print(Self.json(error, host: hostName, source: sources.firstChoice, durationMs: durationMs).text)
            }
            Output.diagnostic("httpdns: \(error.message)")
            let negative = error.code.isNegativeAnswer || error.code == .rejectedByGuard
            throw ExitCode(negative ? ExitStatus.negative : ExitStatus.unreachable)
        }
    }

    /// The flags over the environment over the file, checked: a bad setting ends the command with exit code 2.
    private func readSettings() async throws -> ResolveSettings {
        var flags: [String: [String]] = [:]
        flags[ResolveSettings.source.key] = source.map { [$0] }
        service.add(to: &flags)
        timing.add(to: &flags)
        fallback.add(to: &flags)
        dns.add(to: &flags)
        flags[ResolveSettings.timeoutMs.key] = timeoutMs.map { [$0] }
        flags[ResolveSettings.tries.key] = tries.map { [$0] }
        // Not case-sensitive on the command line.
        flags[ResolveSettings.type.key] = recordType.map { [$0.uppercased()] }
        flags[ResolveSettings.json.key] = json ? ["true"] : nil
        let environment = ProcessInfo.processInfo.environment
        do {
            let reader = try SettingsReader(
                settings: ResolveSettings.table,
                file: config ?? environment["HTTPDNS_CONFIG"],
                environment: environment,
                flags: flags
            )
            return try await ResolveSettings(reading: reader)
        } catch {
            Output.diagnostic("httpdns resolve: \(error)")
            throw ExitCode(ExitStatus.usage)
        }
    }

    static func json(_ answer: HostResolver.Answer, durationMs: Double) -> JSON {
        let resolution = answer.resolution
        return .object([
            ("host", .string(resolution.host.value)),
            ("ipv4", .array(resolution.ipv4.map { .string($0.description) })),
            ("ipv6", .array(resolution.ipv6.map { .string($0.description) })),
            ("ttl", .integer(Int(resolution.ttlSeconds))),
            ("source", .string(answer.source)),
            ("fallback", .bool(answer.fallback)),
            ("verdict", json(answer.verdict)),
            ("cached", .bool(resolution.cached)),
            ("stale", .bool(resolution.stale)),
            ("durationMs", .number((durationMs * 1000).rounded() / 1000)),
        ])
    }

    static func json(_ verdict: HijackVerdict) -> JSON {
        var members: [(String, JSON)] = [("level", .string(verdict.level.rawValue)), ("reason", .string(verdict.reason.description))]
        if let trusted = verdict.trustedAddresses { members.append(("trusted", .array(trusted.map { .string($0.description) }))) }
        return .object(members)
    }

    static func json(_ error: ResolutionError, host: HostName, source: String, durationMs: Double) -> JSON {
        var members: [(String, JSON)] = [
            ("host", .string(host.value)),
            ("ipv4", .array([])),
            ("ipv6", .array([])),
            ("ttl", error.ttlSeconds.map { .integer(Int($0)) } ?? .null),
            ("source", .string(source)),
        ]
        if let verdict = error.verdict { members.append(("verdict", json(verdict))) }
        members += [
            ("error", .object([("code", .string(error.code.description)), ("message", .string(error.message))])),
            ("durationMs", .number((durationMs * 1000).rounded() / 1000)),
        ]
        return .object(members)
    }

    static func text(_ answer: HostResolver.Answer, durationMs: Double) -> String {
        let resolution = answer.resolution
        var lines: [String] = []
        for address in resolution.ipv4 { lines.append("\(resolution.host)\tA\t\(address)") }
        for address in resolution.ipv6 { lines.append("\(resolution.host)\tAAAA\t\(address)") }
        if resolution.ipv4.isEmpty && resolution.ipv6.isEmpty { lines.append("\(resolution.host)\t(no addresses)") }
        var notes = (resolution.cached ? " cached" : "") + (resolution.stale ? " stale" : "") + (answer.fallback ? " fallback" : "")
        if answer.verdict.level != .ok {
            let trusted = answer.verdict.trustedAddresses.map { " (trusted: \($0.map(\.description).joined(separator: " ")))" } ?? ""
            notes += ", \(answer.verdict)\(trusted)"
        }
        lines.append("ttl \(resolution.ttlSeconds)s, source \(answer.source)\(notes), \(String(format3: durationMs)) ms")
        return lines.joined(separator: "\n")
    }
}

/// The sources a `resolve` (or a `fetch`) asks, made from its settings, and how it asks them.
struct Sources {
    private let resolver: HostResolver?
    private let cache: ResolverCache?
    private let shutdowns: [@Sendable () async -> Void]
    /// The source asked first, for an error's `source`.
    let firstChoice: String
    private let guardOnly = HijackGuard()

    private init(resolver: HostResolver?, cache: ResolverCache?, shutdowns: [@Sendable () async -> Void]) {
        self.resolver = resolver
        self.cache = cache
        self.shutdowns = shutdowns
        firstChoice = resolver?.trusted.source.name ?? cache?.source.name ?? ""
    }

    /// - Throws: the library's error for a configuration it refuses; whatever was started is shut down.
    static func make(_ settings: ResolveSettings) async throws -> Sources {
        var shutdowns: [@Sendable () async -> Void] = []
        func cares() throws -> CAresSource {
            let source = try CAresSource(configuration: settings.cares)
            shutdowns.append { await source.shutdown() }
            return source
        }
        func native(_ connection: ServiceConnection) throws -> NativeServiceSource {
            let source = try NativeServiceSource(configuration: .init(connection: connection))
            shutdowns.append { await source.shutdown() }
            return source
        }
        func dot(_ configuration: DoTSource.Configuration) throws -> DoTSource {
            let source = try DoTSource(configuration: configuration)
            shutdowns.append { await source.shutdown() }
            return source
        }
        do {
            switch settings.source {
            case .auto:
                // The tls:// servers when `servers` names them, else the HTTPDNS service's native API.
                let trusted: any ResolutionSource
                if let configuration = settings.dot {
                    trusted = try dot(configuration)
                } else {
                    trusted = try native(settings.service!)
                }
                var fallbacks: [any ResolutionSource] = []
                for name in settings.fallbacks {
                    fallbacks.append(name == "cares" ? try cares() : SystemSource())
                }
                let resolver = try HostResolver(trusted: trusted, fallbacks: fallbacks)
                return Sources(resolver: resolver, cache: nil, shutdowns: shutdowns)
            case .httpdns:
                return Sources(resolver: nil, cache: try ResolverCache(source: try native(settings.service!)), shutdowns: shutdowns)
            case .doh:
                let source = try DoHSource(configuration: .init(connection: settings.service!))
                shutdowns.append { await source.shutdown() }
                return Sources(resolver: nil, cache: try ResolverCache(source: source), shutdowns: shutdowns)
            case .dot:
                return Sources(resolver: nil, cache: try ResolverCache(source: try dot(settings.dot!)), shutdowns: shutdowns)
            case .cares:
                return Sources(resolver: nil, cache: try ResolverCache(source: try cares()), shutdowns: shutdowns)
            case .system:
                return Sources(resolver: nil, cache: try ResolverCache(source: SystemSource()), shutdowns: shutdowns)
            }
        } catch {
            for shutdown in shutdowns { await shutdown() }
            throw error
        }
    }

    /// Through the policy for `auto`; otherwise through the one source, a local resolver's answer judged by the
    /// guard's rules that need no trusted answer (a private address for a public name), for the record only. The
    /// service's answers, and those of DNS over TLS, are the trusted ones: no verdict on them.
    func resolve(_ host: HostName, families: AddressFamilies) async throws -> HostResolver.Answer {
        if let resolver { return try await resolver.resolve(host, families: families) }
        let resolution = try await cache!.resolve(host, families: families)
        let trustedSource = cache!.source is NativeServiceSource || cache!.source is DoHSource || cache!.source is DoTSource
        let verdict = trustedSource ? .ok : guardOnly.judge(resolution.addresses, host: host, trusted: nil)
        return HostResolver.Answer(resolution: resolution, fallback: false, verdict: verdict)
    }

    /// The policy as a ``HostResolver``: the one made for `auto`, else the one source with no fallback.
    func hostResolver() throws -> HostResolver {
        try resolver ?? HostResolver(trusted: cache!.source, fallbacks: [])
    }

    func shutdown() async {
        for shutdown in shutdowns { await shutdown() }
    }
}

extension String {
    /// A number with three decimals, without Foundation's formatter.
    init(format3 value: Double) {
        let thousandths = Int((value * 1000).rounded())
        let fraction = String(thousandths % 1000)
        self = "\(thousandths / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
