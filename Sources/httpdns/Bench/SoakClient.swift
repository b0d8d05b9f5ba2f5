import ArgumentParser
import Glibc
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSWire

/// The library side of the soak (scripts/soak.sh --client): `HostResolver` lookups through a service, one JSON line
/// a second saying how many were answered, how many of those stale, and how many failed, with the first errors.
struct SoakClient: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak-client",
        abstract: "HostResolver lookups through a service for a while; one JSON line a second: answered, stale, failed."
    )

    @OptionGroup var service: BenchServiceOptions

    @Option(help: "How long to go on looking up, in seconds.")
    var seconds = 60

    @Option(help: "Names to look up: n0.SUFFIX … n(N-1).SUFFIX, each resolved once before the clock starts.")
    var names = 200

    @Option(help: "The zone the names are in; the service's upstream must answer every name under it.")
    var suffix = "miss.test"

    @Option(help: "Lookups in flight at once.")
    var concurrency = 8

    @Option(name: .customLong("pause-ms"), help: "Each task's pause between two lookups, in milliseconds (0: none).")
    var pauseMs = 1

    func validate() throws {
        guard seconds > 0, names > 0, concurrency > 0 else { throw ValidationError("--seconds, --names and --concurrency must be positive") }
        guard pauseMs >= 0 else { throw ValidationError("--pause-ms must be 0 or more") }
    }

    final class Counts: Sendable {
        let state = Mutex<[Int: Second]>([:])
    }

    struct Second: Sendable {
        var answered = 0
        var stale = 0
        var failed = 0
        var errors: [String] = []
    }

    func run() async throws {
        let hosts = try (0..<names).map { try HostName("n\($0).\(suffix)") }
        let source = try NativeServiceSource(configuration: .init(connection: try service.connection()))
        let resolver = try HostResolver(trusted: source, fallbacks: [])
        let failedFirst = try await resolver.preResolve(hosts, families: .ipv4)
        guard failedFirst.isEmpty else {
            await source.shutdown()
            throw ValidationError("\(failedFirst.count) of \(names) names failed before the soak began: \(failedFirst.first!.value)")
        }
        let (seconds, pause) = (self.seconds, Duration.milliseconds(pauseMs))
        let clock = ContinuousClock()
        let start = clock.now
        let counts = Counts()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while clock.now - start < .seconds(seconds) {
                        let host = hosts.randomElement()!
                        let outcome: Result<HostResolver.Answer, any Error>
                        do { outcome = .success(try await resolver.resolve(host, families: .ipv4)) } catch { outcome = .failure(error) }
                        let index = Int((clock.now - start).components.seconds)
                        if pause > .zero { try? await clock.sleep(for: pause) }
                        counts.state.withLock { counts in
                            switch outcome {
                            case .success(let answer):
                                counts[index, default: Second()].answered += 1
                                if answer.resolution.stale { counts[index, default: Second()].stale += 1 }
                            case .failure(let error):
                                counts[index, default: Second()].failed += 1
                                if counts[index, default: Second()].errors.count < 3 { counts[index, default: Second()].errors.append("\(host): \(error)") }
                            }
                        }
                    }
                }
            }
            group.addTask {
                // One line a second, for the second just ended.
                for index in 0..<seconds {
                    try? await clock.sleep(until: start + .seconds(index + 1))
                    let counted = counts.state.withLock { $0.removeValue(forKey: index) } ?? Second()
                    print(Self.line(index, counted))
                    fflush(nil)  // every stream: a pipe is block-buffered; scripts/soak.py acts on each line as it comes
                }
            }
        }
        // Lookups that ended after the last second are counted in one more line.
        let late = counts.state.withLock { counts in
            counts.values.reduce(into: Second()) { total, next in
                total.answered += next.answered
                total.stale += next.stale
                total.failed += next.failed
                total.errors += next.errors
            }
        }
        print(Self.line(seconds, late))
        await source.shutdown()
    }

    static func line(_ second: Int, _ counted: Second) -> String {
        JSON.object([
            ("second", .integer(second)), ("answered", .integer(counted.answered)), ("stale", .integer(counted.stale)),
            ("failed", .integer(counted.failed)), ("errors", .array(counted.errors.map { .string($0) })),
        ]).text
    }
}
