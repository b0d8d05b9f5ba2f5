import HTTPDNSCore
import Synchronization

/// A source with fixed answers per host: addresses, a negative answer, or a failure. Counts its queries.
final class StubSource: ResolutionSource {
    enum Reply: Sendable {
        case addresses(ipv4: [String], ipv6: [String], ttl: UInt32)
        case negative(NegativeAnswer)
        case failure(ResolutionError.Code)
    }

    var name: String { "stub" }

    private let replies: Mutex<[String: Reply]>
    private let counts = Mutex<[String: Int]>([:])

    init(_ replies: [String: Reply] = [:]) {
        self.replies = Mutex(replies)
    }

    func set(_ host: String, _ reply: Reply) {
        replies.withLock { $0[host] = reply }
    }

    func queryCount(_ host: String) -> Int {
        counts.withLock { $0[host] ?? 0 }
    }

    func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        counts.withLock { $0[host.value, default: 0] += 1 }
        switch replies.withLock({ $0[host.value] }) ?? .negative(.nameNotFound) {
        case .addresses(let ipv4, let ipv6, let ttl):
            let v4 = ipv4.compactMap(IPv4Address.init)
            let v6 = ipv6.compactMap(IPv6Address.init)
            return SourceAnswer(
                ipv4: families.contains(.ipv4) ? (v4.isEmpty ? .negative(.noData, ttlSeconds: nil) : .addresses(v4, ttlSeconds: ttl)) : nil,
                ipv6: families.contains(.ipv6) ? (v6.isEmpty ? .negative(.noData, ttlSeconds: nil) : .addresses(v6, ttlSeconds: ttl)) : nil
            )
        case .negative(let kind):
            return .negative(kind, families: families)
        case .failure(let code):
            throw ResolutionError(code, "stub failure for \(host)")
        }
    }
}
