#if canImport(Glibc)
    import Glibc
#endif

/// A TCP port on 127.0.0.1 that refuses every connection for as long as this lives: a socket bound to it that
/// never listens, so no other process can take the port meanwhile. For tests of an address that is down.
public final class ClosedTCPPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try boundLoopbackSocket()
    }

    deinit {
        close(fd)
    }
}

/// A TCP port on 127.0.0.1 that takes connections and never says a word, for as long as this lives: a socket that
/// listens and never accepts, so the kernel completes each handshake and what the client sends sits unread. For
/// tests of an address that is slow: a TLS client waits for the server's hello until its own timeout.
public final class SilentTCPListener: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try boundLoopbackSocket()
        guard listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ChildProcess.SpawnError(description: "listen: \(reason)")
        }
    }

    deinit {
        close(fd)
    }
}

/// A close-on-exec TCP socket bound to a free port of 127.0.0.1, and the port.
private func boundLoopbackSocket() throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw ChildProcess.SpawnError(description: "socket: \(String(cString: strerror(errno)))") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    guard bound == 0, named == 0 else {
        let reason = String(cString: strerror(errno))
        close(fd)
        throw ChildProcess.SpawnError(description: "bind: \(reason)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
