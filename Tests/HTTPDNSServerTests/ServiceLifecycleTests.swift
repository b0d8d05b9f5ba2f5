import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTesting
import Logging
import ServiceLifecycle
import Testing

/// The service's two lifecycles besides `run(logger:)`: the scoped form, and a `Service` in a backend's
/// `ServiceGroup`. curl checks that it answers while it runs and not after.
@Suite struct ServiceLifecycleTests {
    func makeService(host: String = "127.0.0.1", port: Int) throws -> HTTPDNSService {
        var configuration = HTTPDNSServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.rateLimitPerSecond = 0
        let cache = try ResolverCache(source: StaticSource([:]))
        return try HTTPDNSService(configuration: configuration, resolver: cache, metrics: nil, logger: Logger(label: "httpdns.test"))
    }

    @Test func theScopedServiceAnswersWhileItsBodyRunsAndStopsAfter() async throws {
        let curl = try #require(ChildProcess.find("curl"), "curl is missing: run scripts/install-deps.sh")
        let url = try await withHTTPDNSService(try makeService(port: 0)) { port in
            let url = "http://127.0.0.1:\(port)/healthz"
            let run = try await ChildProcess.run(executable: curl, arguments: ["-s", "-f", url])
            #expect(run.status == .exited(0) && run.stdout == #"{"status":"ok"}"#, "\(run)")
            return url
        }
        let after = try await ChildProcess.run(executable: curl, arguments: ["-s", "-f", "--max-time", "5", url])
        #expect(after.status != .exited(0), "still answering after its scope: \(after)")
    }

    @Test func aServiceThatCannotListenSaysWhy() async throws {
        // Port 1 needs privileges the test does not take; as root, it is bound twice instead.
        let first = try makeService(port: 0)
        _ = try await withHTTPDNSService(first) { port in
            let error = await #expect(throws: (any Error).self) {
                try await withHTTPDNSService(try makeService(port: port)) { _ in }
            }
            #expect("\(String(describing: error))".contains("Address already in use"), "\(String(describing: error))")
        }
    }

    @Test func asAServiceItRunsUntilTheGroupShutsDownGracefully() async throws {
        let curl = try #require(ChildProcess.find("curl"), "curl is missing: run scripts/install-deps.sh")
        // A `Service` listens where it is configured and cannot say where it got with port 0: a random 127.0.0.x and
        // high port, again on the rare collision, as for every other server a test starts.
        try await LoopbackPeer.start { host, port in
            do {
                try await runAsAService(host: host, port: port, curl: curl)
            } catch where "\(error)".contains("Address already in use") {
                throw PeerStartError(description: "\(error)", retryable: true)
            }
        }
    }

    private func runAsAService(host: String, port: Int, curl: String) async throws {
        let url = "http://\(host):\(port)/healthz"
        let group = ServiceGroup(services: [try makeService(host: host, port: port)], logger: Logger(label: "httpdns.test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // Connection refused until the service listens: curl retries on that signal (its back-off starts at 1 s).
            let run = try await ChildProcess.run(
                executable: curl,
                arguments: ["-s", "-f", "--retry", "50", "--retry-connrefused", "--retry-delay", "0", "--retry-max-time", "20", url]
            )
            guard run.status == .exited(0) else {
                // The group's own error (a port taken) says more than curl's.
                await group.triggerGracefulShutdown()
                try await tasks.next()
                Issue.record("curl: \(run)")
                return
            }
            await group.triggerGracefulShutdown()
            try await tasks.next()
        }
        let after = try await ChildProcess.run(executable: curl, arguments: ["-s", "-f", "--max-time", "5", url])
        #expect(after.status != .exited(0), "still answering after the group stopped: \(after)")
    }
}
