import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where the command lines (`httpdns`, `httpdns-bench`) write: results to stdout, diagnostics to stderr.
package enum Output {
    package static func diagnostic(_ message: String) {
        var line = message
        if !line.hasSuffix("\n") { line += "\n" }
        // write(2) on fd 2 rather than the C `stderr` global, which Swift 6 treats as shared mutable state.
        _ = try? write(Array(line.utf8), to: 2)
    }

    /// A body's piece to stdout, unbuffered (as it arrives), after whatever `print` buffered.
    package static func writeStdout(_ piece: ByteBuffer) throws {
        fflush(nil)
        try piece.withUnsafeReadableBytes { try write($0, to: 1) }
    }

    /// All of `bytes` to `descriptor`, through short writes and interruptions.
    private static func write(_ bytes: [UInt8], to descriptor: Int32) throws {
        try bytes.withUnsafeBytes { try write($0, to: descriptor) }
    }

    private static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) throws {
        var written = 0
        while written < bytes.count {
            let result = Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if result < 0 {
                if errno == EINTR { continue }
                throw OutputError(reason: String(cString: strerror(errno)))
            }
            written += result
        }
    }
}

/// Writing to stdout failed (a closed pipe, a full disk).
package struct OutputError: Error, CustomStringConvertible {
    package let reason: String
    package var description: String { "cannot write the output: \(reason)" }
}
