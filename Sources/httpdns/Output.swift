#if canImport(Glibc)
    import Glibc
#endif

/// Where the command line writes: results to stdout, diagnostics to stderr.
enum Output {
    static func diagnostic(_ message: String) {
        var line = message
        if !line.hasSuffix("\n") { line += "\n" }
        // write(2) on fd 2 rather than the C `stderr` global, which Swift 6 treats as shared mutable state.
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }
}
