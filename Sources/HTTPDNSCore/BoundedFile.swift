import Glibc

/// Reading a file that a setting names (the configuration file, the accounts file, the warm-start file): a regular
/// file of at most `maxBytes`, so that a path such as /dev/zero, a FIFO or a huge file is refused at once instead of
/// hanging or filling memory.
package enum BoundedFile {
    /// The file's bytes.
    /// - Throws: a sentence saying why it cannot be read, for the caller to put in its own error.
    package static func read(_ path: String, maxBytes: Int) throws(BoundedFileError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { throw BoundedFileError(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw BoundedFileError(String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw BoundedFileError("it is not a regular file") }
        guard status.st_size <= maxBytes else { throw BoundedFileError("it is larger than \(maxBytes) bytes (\(status.st_size))") }
        // Read to the end, not to st_size: the file may have grown since fstat, and some file systems report 0.
        // The buffer grows up to one byte past the limit, which is how a file over it is told.
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size) + 1)
        var count = 0
        while true {
            if count == bytes.count {
                guard count <= maxBytes else { throw BoundedFileError("it is larger than \(maxBytes) bytes") }
                bytes.append(contentsOf: repeatElement(0, count: min(max(count, 4096), maxBytes - count + 1)))
            }
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw BoundedFileError(String(cString: strerror(errno))) }
            if got == 0 { break }
            count += got
        }
        bytes.removeSubrange(count...)
        return bytes
    }
}

/// Why a file could not be read, as a sentence.
package struct BoundedFileError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
