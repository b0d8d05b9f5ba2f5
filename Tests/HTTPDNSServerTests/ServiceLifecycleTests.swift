import Glibc
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTesting
import Logging
import ServiceLifecycle
import Testing

/// The service's two lifecycles besides `run(logger:)`: the scoped form, and a `Service` in a backend's
/// `ServiceGroup`. curl checks that it answers while it runs and not after.
@Suite struct ServiceLifecycleTests {
    func makeService(port: Int) throws -> HTTPDNSService {
        var configuration = HTTPDNSServerConfiguration()
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
        let port = try Self.unusedPort()
        let group = ServiceGroup(services: [try makeService(port: port)], logger: Logger(label: "httpdns.test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // Connection refused until the service listens: curl retries on that signal (its back-off starts at 1 s).
            let run = try await ChildProcess.run(
                executable: curl,
                arguments: ["-s", "-f", "--retry", "50", "--retry-connrefused", "--retry-delay", "0", "--retry-max-time", "20",
                            "http://127.0.0.1:\(port)/healthz"]
            )
            #expect(run.status == .exited(0), "\(run)")
            await group.triggerGracefulShutdown()
            try await tasks.next()
        }
        let after = try await ChildProcess.run(executable: curl, arguments: ["-s", "-f", "--max-time", "5", "http://127.0.0.1:\(port)/healthz"])
        #expect(after.status != .exited(0), "still answering after the group stopped: \(after)")
    }

    /// A port the kernel just gave out and took back: free unless another process takes it in between.
    static func unusedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound, "cannot bind a loopback port: \(String(cString: strerror(errno)))")
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
