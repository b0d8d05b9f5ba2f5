import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Resolves names through the operating system's `getaddrinfo(3)`: `/etc/hosts`, `/etc/nsswitch.conf` and the
/// resolvers in `/etc/resolv.conf`. This is the path a hijacked network controls; use it as the last fallback.
///
/// `getaddrinfo` reports no TTL, so answers carry ``Configuration/ttl``. Each lookup blocks a thread
/// of Dispatch's global pool, never a Swift concurrency thread.
public struct SystemSource: ResolutionSource {
    public struct Configuration: Sendable, Hashable {
        /// The TTL given to every answer, since the system resolver does not report one: whole seconds (a
        /// fraction is dropped, a negative TTL is 0). Default 60 s.
        public var ttl: Duration = .seconds(60)
        /// The name used in stats, logs and metric dimensions. Default `system`.
        public var name: String = "system"

        public init() {}
    }

    public let configuration: Configuration
    public var name: String { configuration.name }
    /// ``Configuration/ttl`` as answers carry it.
    private let ttlSeconds: UInt32

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.ttlSeconds = UInt32(clamping: max(configuration.ttl.components.seconds, 0))
    }

    public func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        guard !families.isEmpty else { throw ResolutionError.noFamilies(host) }
        let ttl = ttlSeconds
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Self.lookUp(host, families: families, ttlSeconds: ttl))
            }
        }
    }

    // glibc's GNU-only codes for "the name has no address of that family"; Swift's Glibc module hides them.
    private static let eaiNoData: Int32 = -5
    private static let eaiAddressFamily: Int32 = -9

    private static func lookUp(_ host: HostName, families: AddressFamilies, ttlSeconds: UInt32) -> Result<SourceAnswer, ResolutionError> {
        var hints = addrinfo()
        hints.ai_family = families == .ipv4 ? AF_INET : families == .ipv6 ? AF_INET6 : AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.value, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0 else {
            switch status {
            case EAI_NONAME:
                return .success(.negative(.nameNotFound, families: families))
            case Self.eaiNoData, Self.eaiAddressFamily:
                return .success(.negative(.noData, families: families))
            case EAI_AGAIN:
                return .failure(
                    ResolutionError(.timeout, "the system resolver gave a temporary failure (timeout or SERVFAIL) for \(families) of \(host)")
                )
            case EAI_FAIL:
                return .failure(ResolutionError(.serverFailure, "the system resolver failed permanently for \(families) of \(host)"))
            default:
                return .failure(ResolutionError(.internalError, "getaddrinfo failed for \(host): \(String(cString: gai_strerror(status)))"))
            }
        }
        var ipv4: [IPv4Address] = []
        var ipv6: [IPv6Address] = []
        var node = list
        while let current = node {
            if let address = current.pointee.ai_addr {
                switch current.pointee.ai_family {
                case AF_INET:
                    let sin = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                    ipv4.append(IPv4Address(UInt32(bigEndian: sin.sin_addr.s_addr)))
                case AF_INET6:
                    let sin6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                    ipv6.append(IPv6Address(sin6.sin6_addr))
                default:
                    break
                }
            }
            node = current.pointee.ai_next
        }
        var answer = SourceAnswer()
        if families.contains(.ipv4) {
            answer.ipv4 = ipv4.isEmpty ? .negative(.noData, ttlSeconds: nil) : .addresses(ipv4, ttlSeconds: ttlSeconds)
        }
        if families.contains(.ipv6) {
            answer.ipv6 = ipv6.isEmpty ? .negative(.noData, ttlSeconds: nil) : .addresses(ipv6, ttlSeconds: ttlSeconds)
        }
        return .success(answer)
    }
}
