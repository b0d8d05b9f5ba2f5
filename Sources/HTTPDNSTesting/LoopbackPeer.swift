/// A server a test starts on loopback (dnsmasq, nginx) could not start, and whether another address and port may
/// do better (the one picked was taken).
public struct PeerStartError: Error, CustomStringConvertible {
    public let description: String
    public let retryable: Bool

    public init(description: String, retryable: Bool) {
        self.description = description
        self.retryable = retryable
    }
}

package enum LoopbackPeer {
    /// `start` on a random 127.0.0.x and high port, again on another on the rare collision (a retryable
    /// ``PeerStartError``), five times at most.
    package static func start<Peer>(_ start: (_ address: String, _ port: Int) async throws -> Peer) async throws -> Peer {
        var lastError: (any Error)?
        for _ in 0..<5 {
            do {
                return try await start("127.0.0.\(Int.random(in: 2...254))", Int.random(in: 20_000...60_000))
            } catch let error as PeerStartError where error.retryable {
                lastError = error
            }
        }
        throw lastError!
    }

    /// Runs `body` with `peer`, and stops it afterwards whatever happens.
    static func run<Peer, T>(_ peer: Peer, stop: (Peer) -> Void, _ body: (Peer) async throws -> T) async throws -> T {
        do {
            let result = try await body(peer)
            stop(peer)
            return result
        } catch {
            stop(peer)
            throw error
        }
    }
}
