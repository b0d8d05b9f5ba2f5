import Glibc

/// A TCP socket listening on a loopback address and port that never accepts, for as long as it lives. Either a
/// witness (``acceptedNothing``: no connection came), or, black-holed, a listener with a backlog of 0 whose one
/// queue place is taken by a connection of its own, so the kernel drops every further SYN: a client's connect
/// neither succeeds nor is refused.
final class LoopbackListener {
    let address: String
    let port: Int
    private let fd: Int32
    private var filler: Int32 = -1

    /// - Parameters:
    ///   - address: an IPv4 or IPv6 loopback address (`127.0.0.9`, `::1`).
    ///   - port: the port, or 0 for a free one.
    ///   - blackHole: whether to fill the queue, so that connects hang.
    init(address: String, port: Int = 0, blackHole: Bool = false) throws {
        self.address = address
        let isIPv6 = address.contains(":")
        let family = isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw Self.error("socket") }
        var storage = sockaddr_storage()
        var length = Self.fill(&storage, address: address, port: port, isIPv6: isIPv6)
        guard withUnsafePointer(to: &storage, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }) == 0,
            listen(fd, blackHole ? 0 : 16) == 0,
            withUnsafeMutablePointer(to: &storage, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }) == 0
        else {
            let error = Self.error("bind \(address):\(port)")
            close(fd)
            throw error
        }
        self.fd = fd
        self.port = Int(
            UInt16(
                bigEndian: isIPv6
                    ? withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port } }
                    : withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port } }
            )
        )
        guard blackHole else { return }
        // One connection of our own takes the queue's one place. A blocking connect returns once the handshake is
        // done, and the kernel has queued the connection by then.
        let filler = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var target = sockaddr_storage()
        let targetLength = Self.fill(&target, address: address, port: self.port, isIPv6: isIPv6)
        guard filler >= 0,
            withUnsafePointer(to: &target, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, targetLength) } }) == 0
        else {
            // deinit closes the listener.
            let error = Self.error("fill \(address):\(self.port)")
            if filler >= 0 { close(filler) }
            throw error
        }
        self.filler = filler
    }

    deinit {
        if filler >= 0 { close(filler) }
        close(fd)
    }

    /// For a witness: whether no connection has come since it started listening.
    var acceptedNothing: Bool {
        let accepted = accept(fd, nil, nil)
        guard accepted >= 0 else { return errno == EAGAIN || errno == EWOULDBLOCK }
        close(accepted)
        return false
    }

    private static func fill(_ storage: inout sockaddr_storage, address: String, port: Int, isIPv6: Bool) -> socklen_t {
        withUnsafeMutablePointer(to: &storage) { pointer in
            if isIPv6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { raw in
                    raw.pointee.sin6_family = sa_family_t(AF_INET6)
                    raw.pointee.sin6_port = in_port_t(port).bigEndian
                    _ = inet_pton(AF_INET6, address, &raw.pointee.sin6_addr)
                    return socklen_t(MemoryLayout<sockaddr_in6>.size)
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { raw in
                raw.pointee.sin_family = sa_family_t(AF_INET)
                raw.pointee.sin_port = in_port_t(port).bigEndian
                _ = inet_pton(AF_INET, address, &raw.pointee.sin_addr)
                return socklen_t(MemoryLayout<sockaddr_in>.size)
            }
        }
    }

    private static func error(_ what: String) -> SocketError {
        SocketError(description: "\(what): \(String(cString: strerror(errno)))")
    }
}

struct SocketError: Error, CustomStringConvertible {
    let description: String
}
