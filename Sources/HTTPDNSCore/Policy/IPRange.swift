/// A block of addresses in CIDR notation (`10.0.0.0/8`, `fc00::/7`).
public struct IPRange: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    public let prefixLength: Int

    /// Parses `ADDRESS/PREFIX`; a bare address is a block of one.
    /// - Throws: ``ConfigurationError`` (key `ranges`) saying what is wrong.
    public init(parsing text: String) throws(ConfigurationError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else {
            throw ConfigurationError(key: "ranges", reason: "'\(text)' is not ADDRESS/PREFIX")
        }
        let width = address.isIPv4 ? 32 : 128
        let prefix: Int
        if parts.count == 2 {
            guard let number = Int(parts[1]), (0...width).contains(number) else {
                throw ConfigurationError(.outOfRange, key: "ranges", reason: "'\(text)': the prefix must be 0 to \(width)")
            }
            prefix = number
        } else {
            prefix = width
        }
        network = address
        prefixLength = prefix
    }

    /// Whether `address` is in the block.
    public func contains(_ address: IPAddress) -> Bool {
        switch (network, address) {
        case (.v4(let network), .v4(let address)):
            guard prefixLength > 0 else { return true }
            let mask = UInt32.max << UInt32(32 - prefixLength)
            return network.value & mask == address.value & mask
        case (.v6(let network), .v6(let address)):
            func masked(_ high: UInt64, _ low: UInt64) -> (UInt64, UInt64) {
                let highBits = min(prefixLength, 64)
                let lowBits = max(prefixLength - 64, 0)
                let highMask: UInt64 = highBits == 0 ? 0 : UInt64.max << UInt64(64 - highBits)
                let lowMask: UInt64 = lowBits == 0 ? 0 : UInt64.max << UInt64(64 - lowBits)
                return (high & highMask, low & lowMask)
            }
            return masked(network.high, network.low) == masked(address.high, address.low)
        default:
            return false
        }
    }

    public var description: String { "\(network)/\(prefixLength)" }

    /// The private, shared, link-local, loopback and unspecified blocks of the threat model (H3): answers in them
    /// for a public name are a sign of a lying resolver.
    public static let privateAndReserved: [IPRange] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16",
        "::/128", "::1/128", "fc00::/7", "fe80::/10",
    ].map { try! IPRange(parsing: $0) }  // literals checked by the tests
}

extension IPAddress {
    var isIPv4: Bool {
        if case .v4 = self { true } else { false }
    }
}
