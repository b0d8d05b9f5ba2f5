import ArgumentParser
import HTTPDNSCAres
import HTTPDNSCore
import HTTPDNSWire

/// `httpdns resolve HOST`: one lookup, printed for people or as JSON.
struct ResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve a host name through c-ares or the system resolver.",
        discussion: """
            Exit codes: 0 answered; 1 the name has no address (NXDOMAIN or no data); 2 bad input; \
            3 no server could be reached or none gave an answer.
            """
    )

    enum SourceChoice: String, ExpressibleByArgument, CaseIterable {
        case cares, system
    }

    enum RecordType: String, ExpressibleByArgument, CaseIterable {
        case a = "A", aaaa = "AAAA", any = "ANY"

        init?(argument: String) { self.init(rawValue: argument.uppercased()) }

        var families: AddressFamilies {
            switch self {
            case .a: .ipv4
            case .aaaa: .ipv6
            case .any: .all
            }
        }
    }

    @Argument(help: "The host name to resolve.")
    var host: String

    @Option(help: "Where to ask: cares (DNS through c-ares) or system (getaddrinfo).")
    var source: SourceChoice = .cares

    @OptionGroup var dns: DNSOptions

    @Option(name: .customLong("type"), help: "A, AAAA or ANY (both).")
    var recordType: RecordType = .any

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
        let servers = try dns.servers()
        if source == .system, !servers.isEmpty {
            Output.diagnostic("httpdns: --dns applies to --source cares; the system resolver uses /etc/resolv.conf")
            throw ExitCode(ExitStatus.usage)
        }

        let resolutionSource: any ResolutionSource
        var caresSource: CAresSource?
        switch source {
        case .cares:
            let cares: CAresSource
            do {
                cares = try CAresSource(configuration: dns.caresConfiguration(servers: servers))
            } catch {
                // c-ares could not start: an unreadable or invalid resolver configuration.
                Output.diagnostic("httpdns: \(error)")
                throw ExitCode(ExitStatus.usage)
            }
            caresSource = cares
            resolutionSource = cares
        case .system:
            resolutionSource = SystemSource()
        }
        let cache = try ResolverCache(source: resolutionSource)
        let stopwatch = Stopwatch()
        let result: Result<Resolution, ResolutionError>
        do {
            result = .success(try await cache.resolve(hostName, families: recordType.families))
        } catch let error as ResolutionError {
            result = .failure(error)
        }
        let durationMs = Double(stopwatch.elapsedNanoseconds) / 1_000_000
        await caresSource?.shutdown()

        switch result {
        case .success(let resolution):
            print(json ? Self.json(resolution, durationMs: durationMs).text : Self.text(resolution, durationMs: durationMs))
        case .failure(let error):
            if json {
                print(Self.json(error, host: hostName, source: resolutionSource.name, durationMs: durationMs).text)
            }
            Output.diagnostic("httpdns: \(error.message)")
            throw ExitCode(error.code.isNegativeAnswer ? ExitStatus.negative : ExitStatus.unreachable)
        }
    }

    static func json(_ resolution: Resolution, durationMs: Double) -> JSON {
        .object([
            ("host", .string(resolution.host.value)),
            ("ipv4", .array(resolution.ipv4.map { .string($0.description) })),
            ("ipv6", .array(resolution.ipv6.map { .string($0.description) })),
            ("ttl", .integer(Int(resolution.ttlSeconds))),
            ("source", .string(resolution.source)),
            ("cached", .bool(resolution.cached)),
            ("stale", .bool(resolution.stale)),
            ("durationMs", .number((durationMs * 1000).rounded() / 1000)),
        ])
    }

    static func json(_ error: ResolutionError, host: HostName, source: String, durationMs: Double) -> JSON {
        .object([
            ("host", .string(host.value)),
            ("ipv4", .array([])),
            ("ipv6", .array([])),
            ("ttl", error.ttlSeconds.map { .integer(Int($0)) } ?? .null),
            ("source", .string(source)),
            ("error", .object([("code", .string(error.code.description)), ("message", .string(error.message))])),
            ("durationMs", .number((durationMs * 1000).rounded() / 1000)),
        ])
    }

    static func text(_ resolution: Resolution, durationMs: Double) -> String {
        var lines: [String] = []
        for address in resolution.ipv4 { lines.append("\(resolution.host)\tA\t\(address)") }
        for address in resolution.ipv6 { lines.append("\(resolution.host)\tAAAA\t\(address)") }
        if resolution.ipv4.isEmpty && resolution.ipv6.isEmpty { lines.append("\(resolution.host)\t(no addresses)") }
        let flags = (resolution.cached ? " cached" : "") + (resolution.stale ? " stale" : "")
        lines.append("ttl \(resolution.ttlSeconds)s, source \(resolution.source)\(flags), \(String(format3: durationMs)) ms")
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// A number with three decimals, without Foundation.
    init(format3 value: Double) {
        let thousandths = Int((value * 1000).rounded())
        let fraction = String(thousandths % 1000)
        self = "\(thousandths / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
