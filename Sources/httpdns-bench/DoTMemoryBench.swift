import ArgumentParser
import Foundation
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSWire
import Synchronization

/// Resident memory of DNS over TLS: idle connections, each with its source, and many queries in flight on one
/// connection.
struct DoTMemoryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dot-memory",
        abstract: "Resident growth for idle DoT connections (each its own DoTSource) and for queries in flight on one connection."
    )

    @Option(name: .customLong("dot"), help: "A DNS-over-TLS server that answers, tls://IP[:PORT]: the idle connections go to it.")
    var dotServer: String

    @Option(help: "A DNS-over-TLS server that reads queries and never answers, tls://IP[:PORT]: the queries in flight go to it.")
    var hold: String

    @Option(help: "A file the holding server creates once it has read every query: the sign that all are in flight.")
    var heldFile: String

    @Option(help: "The name both servers' certificate holds.")
    var serverName: String

    @Option(help: "A PEM file of the CA both servers' certificates chain to.")
    var cacert: String

    @Option(help: "Idle connections, each of its own DoTSource.")
    var idleConnections = 64

    @Option(help: "Queries in flight on the one connection to the holding server.")
    var inFlight = 1000

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard idleConnections > 0 else { throw ValidationError("--idle-connections must be positive") }
        guard (1...65_535).contains(inFlight) else { throw ValidationError("--in-flight must be 1 to 65,535") }
    }

    func run() async throws {
        let inFlight = self.inFlight
        // One source, one lookup and its shutdown first: what every source shares (code, TLS's tables, the event loops)
        // is in place before anything is measured.
        let warm = try source(dotServer)
        _ = try await warm.query(try HostName("n0.bench.test"), families: .ipv4)
        await warm.shutdown()

        // The idle connections: the sources made, then one lookup each, after which each keeps its connection open.
        let beforeSources = System.residentBytes()
        let idle = try (0..<idleConnections).map { _ in try source(dotServer) }
        let afterSources = System.residentBytes()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, source) in idle.enumerated() {
                group.addTask { _ = try await source.query(try HostName("n\(index + 1).bench.test"), families: .ipv4) }
            }
            try await group.waitForAll()
        }
        let afterConnections = System.residentBytes()

        // The callers alone, as a control: as many tasks, each suspended on a continuation, kept until the end so that
        // the queries below are measured in fresh pages too.
        let beforeTasks = System.residentBytes()
        let parked = Parked()
        let callers = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<inFlight {
                    group.addTask { await withCheckedContinuation { parked.add($0) } }
                }
            }
        }
        while parked.count < inFlight { try await Task.sleep(for: .milliseconds(1)) }
        let afterTasks = System.residentBytes()

        // The queries in flight: one source, one connection to a server that reads them all and answers none.
        let holding = try source(hold) { configuration in
            configuration.maxQueriesInFlight = inFlight
            configuration.budget = .seconds(120)
            configuration.attemptTimeout = .seconds(120)
        }
        let beforeQueries = System.residentBytes()
        let held = Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<inFlight {
                    group.addTask { _ = try? await holding.query(try HostName("held\(index).bench.test"), families: .ipv4) }
                }
            }
        }
        // The server's sign, polled: every query has reached it, so each is in flight on the connection.
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: heldFile) {
            guard ContinuousClock.now < deadline else {
                throw ValidationError("the holding server did not read \(inFlight) queries within 60 s (\(heldFile) never appeared)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let afterQueries = System.residentBytes()
        await holding.shutdown()
        await held.value
        parked.resumeAll()
        await callers.value
        for source in idle { await source.shutdown() }

        let perSource = Double(afterSources - beforeSources) / Double(idleConnections)
        let perConnection = Double(afterConnections - afterSources) / Double(idleConnections)
        let perQuery = Double(afterQueries - beforeQueries) / Double(inFlight)
        let perTask = Double(afterTasks - beforeTasks) / Double(inFlight)
        let mib = 1024.0 * 1024.0
        if json {
            print(
                JSON.object([
                    ("benchmark", .string("dot-memory")),
                    ("idleConnections", .integer(idleConnections)),
                    ("sourcesGrowthMiB", .number(Double(afterSources - beforeSources) / mib)),
                    ("connectionsGrowthMiB", .number(Double(afterConnections - afterSources) / mib)),
                    ("bytesPerSource", .number(perSource)),
                    ("bytesPerIdleConnection", .number(perConnection)),
                    ("inFlight", .integer(inFlight)),
                    ("queriesGrowthMiB", .number(Double(afterQueries - beforeQueries) / mib)),
                    ("bytesPerQueryInFlight", .number(perQuery)),
                    ("bytesPerWaitingTask", .number(perTask)),
                ]).text
            )
        } else {
            print("DoT memory (resident growth)")
            print(
                "  \(idleConnections) DoTSources made: +\(formatted(Double(afterSources - beforeSources) / mib)) MiB (\(formatted(perSource / 1024, digits: 1)) KiB each)"
            )
            print(
                "  their \(idleConnections) connections, open and idle: +\(formatted(Double(afterConnections - afterSources) / mib)) MiB (\(formatted(perConnection / 1024, digits: 1)) KiB each)"
            )
            print(
                "  \(inFlight) queries in flight on one connection, with their callers' tasks: +\(formatted(Double(afterQueries - beforeQueries) / mib)) MiB (\(formatted(perQuery, digits: 0)) bytes each)"
            )
            print(
                "  control, \(inFlight) tasks each waiting on a continuation: +\(formatted(Double(afterTasks - beforeTasks) / mib)) MiB (\(formatted(perTask, digits: 0)) bytes each)"
            )
        }
    }

    /// A source for `server` with the certificate's name and CA, its connections open for the whole run; `adjust`
    /// changes the rest.
    private func source(_ server: String, _ adjust: (inout DoTSource.Configuration) -> Void = { _ in }) throws -> DoTSource {
        var configuration = DoTSource.Configuration(servers: [try DoTEndpoint(parsing: server)])
        configuration.serverName = serverName
        configuration.extraTrustRootsPEMFile = cacert
        configuration.idleTimeout = .seconds(600)
        adjust(&configuration)
        return try DoTSource(configuration: configuration)
    }
}

/// Continuations the control's tasks wait on, resumed at the end.
private final class Parked: Sendable {
    private let continuations = Mutex<[CheckedContinuation<Void, Never>]>([])

    func add(_ continuation: CheckedContinuation<Void, Never>) { continuations.withLock { $0.append(continuation) } }

    var count: Int { continuations.withLock { $0.count } }

    func resumeAll() {
        for continuation in continuations.withLock({ $0 }) { continuation.resume() }
    }
}
