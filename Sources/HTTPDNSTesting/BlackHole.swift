#if canImport(Glibc)
    import Glibc
#endif

/// A loopback address and port whose SYNs are dropped: a socket listening with a backlog of 0, and one connection
/// made to it and never accepted, which fills the accept queue. IPv4 (`127.0.0.x`) or IPv6 (`::1`).
public final class BlackHole: Sendable {
    public let address: String
    private let listener: Int32
    private let filler: Int32
    private var isIPv6: Bool { address.contains(":") }

    public init(address: String) throws {
        self.address = address
        let family = address.contains(":") ? AF_INET6 : AF_INET
        listener = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        filler = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0, filler >= 0 else {
            let reason = String(cString: strerror(errno))
            if listener >= 0 { Glibc.close(listener) }
            if filler >= 0 { Glibc.close(filler) }
            throw PeerStartError(description: "socket: \(reason)", retryable: false)
        }
    }

    /// Listens on the port and fills the queue.
    public func listen(port: Int) throws {
        var storage = sockaddr_storage()
        let length: socklen_t
        if isIPv6 {
            var target = sockaddr_in6()
            target.sin6_family = sa_family_t(AF_INET6)
            target.sin6_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET6, address, &target.sin6_addr) == 1 else {
                throw PeerStartError(description: "not an IPv6 address: \(address)", retryable: false)
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeBytes(of: target) { source in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) } }
        } else {
            var target = sockaddr_in()
            target.sin_family = sa_family_t(AF_INET)
            target.sin_addr.s_addr = inet_addr(address)
            target.sin_port = UInt16(port).bigEndian
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeBytes(of: target) { source in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) } }
        }
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, Glibc.listen(listener, 0) == 0 else {
            throw PeerStartError(description: "cannot listen on \(address):\(port): \(String(cString: strerror(errno)))", retryable: false)
        }
        // The one connection a backlog of 0 lets in: completed by the kernel, never accepted.
        let connected = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) } }
        guard connected == 0 else {
            throw PeerStartError(description: "cannot fill \(address):\(port): \(String(cString: strerror(errno)))", retryable: false)
        }
    }

    public func close() {
        Glibc.close(filler)
        Glibc.close(listener)
    }
}
