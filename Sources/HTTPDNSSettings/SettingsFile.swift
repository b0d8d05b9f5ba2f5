import Glibc

/// Reading a file a setting names (the configuration file, the accounts file): a regular file of at most 1 MiB, so
/// that a path such as /dev/zero, a FIFO or a huge file is refused at once instead of hanging or filling memory.
enum SettingsFile {
    static let maxBytes = 1 << 20

    /// The file's bytes.
    /// - Throws: a sentence saying why it cannot be read, for the caller to put in its ``SettingError``.
    static func read(_ path: String) throws(SettingsFileError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { throw SettingsFileError(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw SettingsFileError(String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw SettingsFileError("it is not a regular file") }
        guard status.st_size <= maxBytes else { throw SettingsFileError("it is larger than \(maxBytes) bytes (\(status.st_size))") }
        // Read to the end, not to st_size: the file may have grown since fstat, and some file systems report 0.
        // The buffer grows up to one byte past the limit, which is how a file over it is told.
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size) + 1)
        var count = 0
        while true {
            if count == bytes.count {
                guard count <= maxBytes else { throw SettingsFileError("it is larger than \(maxBytes) bytes") }
                bytes.append(contentsOf: repeatElement(0, count: min(max(count, 4096), maxBytes + 1 - count)))
            }
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw SettingsFileError(String(cString: strerror(errno))) }
            if got == 0 { break }
            count += got
        }
        bytes.removeSubrange(count...)
        return bytes
    }
}

/// Why a settings file could not be read.
struct SettingsFileError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
