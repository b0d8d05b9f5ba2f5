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

    /// Counts by second; a second once printed takes no more, so a lookup that ends as its second is printed is
    /// counted in the next.
    final class Counts: Sendable {
        struct State {
            var seconds: [Int: Second] = [:]
            var printed = 0
        }
        let state = Mutex(State())
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
                        counts.state.withLock { state in
                            let index = max(Int((clock.now - start).components.seconds), state.printed)
                            switch outcome {
                            case .success(let answer):
                                state.seconds[index, default: Second()].answered += 1
                                if answer.resolution.stale { state.seconds[index, default: Second()].stale += 1 }
                            case .failure(let error):
                                state.seconds[index, default: Second()].failed += 1
                                if state.seconds[index, default: Second()].errors.count < 3 {
                                    state.seconds[index, default: Second()].errors.append("\(host): \(error)")
                                }
                            }
                        }
                        if pause > .zero { try? await clock.sleep(for: pause) }
                    }
                }
            }
            group.addTask {
                // One line a second, for the second just ended.
                for index in 0..<seconds {
                    try? await clock.sleep(until: start + .seconds(index + 1))
                    let counted = counts.state.withLock { state in
                        state.printed = index + 1
                        return state.seconds.removeValue(forKey: index) ?? Second()
                    }
                    print(Self.line(index, counted))
                    fflush(nil)  // every stream: a pipe is block-buffered; scripts/soak.py acts on each line as it comes
                }
            }
        }
        // Lookups that ended after the last second are counted in one more line.
        let late = counts.state.withLock { state in
            state.seconds.values.reduce(into: Second()) { total, next in
                total.answered += next.answered
                total.stale += next.stale
                total.failed += next.failed
                total.errors = Array((total.errors + next.errors).prefix(3))
            }
        }
        print(Self.line(seconds, late))
        fflush(nil)
        await source.shutdown()
    }

    static func line(_ second: Int, _ counted: Second) -> String {
        JSON.object([
            ("second", .integer(second)), ("answered", .integer(counted.answered)), ("stale", .integer(counted.stale)),
            ("failed", .integer(counted.failed)), ("errors", .array(counted.errors.map { .string($0) })),
        ]).text
    }
}
