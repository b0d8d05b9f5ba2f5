#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The open file descriptors and threads of this process, read from `/proc/self`.
enum ProcessResources {
    /// Every open descriptor and what it refers to (`socket:[1234]`, `anon_inode:[eventfd]`, a path), so a
    /// descriptor number reused for something else does not pass for the original.
    static func openFileDescriptors() -> [Int32: String] {
        var descriptors: [Int32: String] = [:]
        forEachEntry(of: "/proc/self/fd") { name, directoryFD in
            guard let fd = Int32(name), fd != directoryFD else { return }
            var target = [CChar](repeating: 0, count: 4096)
            let length = readlink("/proc/self/fd/\(fd)", &target, target.count - 1)
            guard length >= 0 else { return }  // closed since the directory was read
            descriptors[fd] = String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return descriptors
    }

    /// The kernel thread IDs of every thread.
    static func threadIDs() -> Set<Int32> {
        var threads: Set<Int32> = []
        forEachEntry(of: "/proc/self/task") { name, _ in
            if let tid = Int32(name) { threads.insert(tid) }
        }
        return threads
    }

    private static func forEachEntry(of path: String, _ body: (String, Int32) -> Void) {
        guard let directory = opendir(path) else { return }
        defer { closedir(directory) }
        let directoryFD = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name != ".", name != ".." else { continue }
            body(name, directoryFD)
        }
    }
}
