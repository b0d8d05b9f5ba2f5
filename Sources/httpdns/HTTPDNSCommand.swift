import ArgumentParser
import HTTPDNSCommandLine

/// `httpdns`: resolve names without trusting the local network's DNS.
@main
struct HTTPDNSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "httpdns",
        abstract: "Resolve names without trusting the local network's DNS.",
        subcommands: [ResolveCommand.self, ServeCommand.self, HealthCommand.self, FetchCommand.self]
    )

    /// Runs the command line (logs to stderr, argument errors exit 2, as the command-line contract says).
    static func main() async {
        await runCommandLine()
    }
}
