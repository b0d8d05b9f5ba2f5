import ArgumentParser
import Logging

#if canImport(Glibc)
    import Glibc
#endif

extension AsyncParsableCommand {
    /// Runs the command line as both executables do: logs go to stderr (stdout carries results: `--json`, figures),
    /// and argument errors exit with ``ExitStatus/usage`` (2), as the command-line contract says, where
    /// swift-argument-parser's own default is 64.
    package static func runCommandLine() async {
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
