#if canImport(Glibc)
    import Glibc
#endif

// Copied from Sources/httpdns (Output.swift, HTTPDNSCommand.swift), only what `httpdns-bench` uses: the two
// executables share no code.

/// Diagnostics to stderr.
enum Output {
    static func diagnostic(_ message: String) {
        var line = message
        if !line.hasSuffix("\n") { line += "\n" }
        // write(2) on fd 2 rather than the C `stderr` global, which Swift 6 treats as shared mutable state.
        let bytes = Array(line.utf8)
        bytes.withUnsafeBytes { bytes in
            var written = 0
            while written < bytes.count {
                let result = Glibc.write(2, bytes.baseAddress! + written, bytes.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return
                }
                written += result
            }
        }
    }
}

/// The exit codes of the command-line contract (docs/CLI.md).
enum ExitStatus {
    /// Bad input: usage, invalid flags.
    static let usage: Int32 = 2
}
