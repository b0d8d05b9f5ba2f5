import HTTPDNSCore
import HTTPDNSSynchronization

/// A source with fixed answers per host, answered at once from memory: addresses, a negative answer, or a
/// failure. A host with no reply of its own gets `init(_:otherwise:)`'s `otherwise` (NXDOMAIN by default). Counts
/// its queries.
///
/// For tests of what sits on top of a source, and for benchmarks that measure the cache and nothing else.
public final class StaticSource: ResolutionSource {
    /// What a query for a host returns.
    public enum Reply: Sendable {
        /// These addresses with one TTL; a family without addresses is a no-data answer.
        case addresses(ipv4: [IPv4Address], ipv6: [IPv6Address], ttl: UInt32)
        case negative(NegativeAnswer)
        case failure(ResolutionError.Code)
        /// One address of each family made from the host name (a different one for most names), in arrays of the
        /// query's own: a cache filled from it holds what it would hold from a real source, for benchmarks.
        case synthesized(ttl: UInt32)

        /// Addresses from a test's own literals. A literal that is no address is a mistake in the test, found at once.
        public static func addresses(ipv4: [String], ipv6: [String], ttl: UInt32) -> Reply {
            func parse<Address>(_ text: String, _ parse: (String) -> Address?) -> Address {
                guard let address = parse(text) else { fatalError("StaticSource: '\(text)' is not an address of its family") }
                return address
            }
            return .addresses(ipv4: ipv4.map { parse($0, IPv4Address.init) }, ipv6: ipv6.map { parse($0, IPv6Address.init) }, ttl: ttl)
        }
    }

    public let name: String

    private let replies: Mutex<[String: Reply]>
    private let otherwise: Reply
    private let counts: Mutex<[String: Int]>?
    private let networkChanges = Mutex(0)

    /// - Parameters:
    ///   - replies: the reply for each name.
    ///   - otherwise: the reply for any other name.
    ///   - name: the source's name, in stats and metric dimensions.
    ///   - countsQueries: whether ``queryCount(_:)`` is kept; a benchmark that fills a cache with many names turns
    ///     it off, so the counts take neither time nor memory.
    public init(
        _ replies: [String: Reply] = [:],
        otherwise: Reply = .negative(.nameNotFound),
        name: String = "static",
        countsQueries: Bool = true
    ) {
        self.replies = Mutex(replies)
        self.otherwise = otherwise
        self.name = name
        counts = countsQueries ? Mutex([:]) : nil
    }

    /// Sets the reply for `host`, replacing any earlier one.
    public func set(_ host: String, _ reply: Reply) {
        replies.withLock { $0[host] = reply }
    }

    /// The queries made for `host` so far (0 when the source does not count).
    public func queryCount(_ host: String) -> Int {
        counts?.withLock { $0[host] ?? 0 } ?? 0
    }

    /// How many times ``networkChanged()`` was called.
    public var networkChangeCount: Int { networkChanges.withLock { $0 } }

    public func networkChanged() async {
        networkChanges.withLock { $0 += 1 }
    }

    public func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        counts?.withLock { $0[host.value, default: 0] += 1 }
        switch replies.withLock({ $0[host.value] }) ?? otherwise {
        case .addresses(let v4, let v6, let ttl):
            return SourceAnswer(
                ipv4: families.contains(.ipv4) ? (v4.isEmpty ? .negative(.noData, ttlSeconds: nil) : .addresses(v4, ttlSeconds: ttl)) : nil,
                ipv6: families.contains(.ipv6) ? (v6.isEmpty ? .negative(.noData, ttlSeconds: nil) : .addresses(v6, ttlSeconds: ttl)) : nil
            )
        case .negative(let kind):
            return .negative(kind, families: families)
        case .synthesized(let ttl):
            let seed = UInt32(truncatingIfNeeded: host.value.hashValue)
            return SourceAnswer(
                ipv4: families.contains(.ipv4) ? .addresses([IPv4Address(0xC000_0200 | (seed & 0xFF))], ttlSeconds: ttl) : nil,
                ipv6: families.contains(.ipv6) ? .addresses([IPv6Address(high: 0x2001_0DB8_0000_0000, low: UInt64(seed))], ttlSeconds: ttl) : nil
            )
        case .failure(let code):
            throw ResolutionError(code, "\(name) failure for \(host)")
        }
    }
}
