import ArgumentParser
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// `httpdns`: resolve names without trusting the local network's DNS.
@main
struct HTTPDNSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "httpdns",
        abstract: "Resolve names without trusting the local network's DNS.",
        subcommands: [ResolveCommand.self, ServeCommand.self, HealthCommand.self, FetchCommand.self]
    )

    /// Runs the command, mapping argument errors to exit code 2 as the command-line contract says
    /// (swift-argument-parser's own default is 64).
    static func main() async {
        // Logs go to stderr: stdout carries results (`resolve --json`, `fetch`'s body).
        LoggingSystem.bootstrap { label in StreamLogHandler.standardError(label: label) }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
                Glibc.exit(0)
            }
            if !message.isEmpty { Output.diagnostic(message) }
            Glibc.exit(code == .validationFailure ? ExitStatus.usage : code.rawValue)
        }
    }
}

/// The exit codes of the command-line contract (docs/CLI.md).
enum ExitStatus {
    static let success: Int32 = 0
    /// resolve: the name has no address. health: degraded or hijack suspected. fetch: the request failed.
    static let negative: Int32 = 1
    /// Bad input: usage, an invalid name, an invalid server address, invalid configuration.
    static let usage: Int32 = 2
    /// Nothing could be reached.
    static let unreachable: Int32 = 3
}
