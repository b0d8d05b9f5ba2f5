import Foundation
import HTTPDNSSynchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `httpdns serve` as a real process on loopback, started from the `httpdns` executable built beside the test
/// runner and stopped by ``stop()`` (once: later calls return the first result).
public final class ServiceProcess: Sendable {
    public let process: ChildProcess
    /// The port the service listens on, on 127.0.0.1.
    public let port: Int

    init(process: ChildProcess, port: Int) {
        self.process = process
        self.port = port
    }

    /// Starts `httpdns serve --listen 127.0.0.1:0 ARGUMENTS`, with `environment` added to the test's own, and
    /// returns once it listens.
    public static func start(_ arguments: [String], environment: [String: String] = [:]) async throws -> ServiceProcess {
        let executable = try executablePath()
        let command = ["serve", "--listen", "127.0.0.1:0"] + arguments
        let process: ChildProcess
        if environment.isEmpty {
            process = try ChildProcess(executable: executable, arguments: command)
        } else {
            // exec keeps the pid, so stopping the shell's pid stops the service.
            let assignments = environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
            let quoted = ([executable] + command).map { "'\($0)'" }.joined(separator: " ")
            process = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "\(assignments) exec \(quoted)"])
        }
        // Our own line, "… port=N [httpdns] listening", once it is complete (not Hummingbird's "listening on").
        let (found, output) = await process.waitForStderr(containing: "[httpdns] listening")
        guard found, let range = output.range(of: #"port=(\d+)"#, options: .regularExpression),
            let port = Int(output[range].dropFirst("port=".count))
        else {
            let status = process.stop(signal: SIGKILL)
            throw ChildProcess.SpawnError(description: "httpdns serve did not start (\(status)): \(output)")
        }
        process.discardStderr()
        return ServiceProcess(process: process, port: port)
    }

    /// Stops the service with SIGTERM (a graceful shutdown) and returns how it ended.
    @discardableResult
    public func stop() -> ChildProcess.Termination {
        process.stop(signal: SIGTERM)
    }

    /// Runs `httpdns COMMAND ARGUMENTS` to its end, with `environment` added to the test's own, less any `HTTPDNS_…`
    /// variable of the test's: a developer's own settings must not change what is asked, or where.
    public static func runCommand(
        _ command: String,
        _ arguments: [String],
        environment: [String: String] = [:]
    ) async throws -> ChildProcess.Completion {
        let executable = try executablePath()
        let unset = ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("HTTPDNS_") }.sorted().flatMap { ["-u", $0] }
        let assignments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try await ChildProcess.run(executable: "/usr/bin/env", arguments: unset + assignments + [executable, command] + arguments)
    }

    /// The `httpdns` executable (or another of the package's, by `name`) built next to the running test runner
    /// (`.build/<triple>/debug/`).
    public static func executablePath(named name: String = "httpdns") throws -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.withUnsafeMutableBytes { readlink("/proc/self/exe", $0.baseAddress!, $0.count - 1) }
        guard count > 0 else {
            throw ChildProcess.SpawnError(description: "readlink /proc/self/exe failed: \(String(cString: strerror(errno)))")
        }
        let runner = String(decoding: buffer[0..<count], as: UTF8.self)
        let directory = runner[..<(runner.lastIndex(of: "/") ?? runner.startIndex)]
        let candidate = "\(directory)/\(name)"
        guard access(candidate, X_OK) == 0 else {
            throw ChildProcess.SpawnError(
                description: "the \(name) executable is not at \(candidate), next to the test runner \(runner): "
                    + "build it first with `swift build --build-tests`"
            )
        }
        return candidate
    }
}
