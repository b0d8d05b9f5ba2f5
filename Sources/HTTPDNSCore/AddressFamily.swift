/// One IP address family, which is also one DNS record type (A or AAAA).
public enum AddressFamily: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ipv4
    case ipv6

    /// The DNS record type that carries addresses of this family: 1 (A) or 28 (AAAA).
    public var recordType: UInt16 {
        switch self {
        case .ipv4: 1
        case .ipv6: 28
        }
    }

    public var description: String {
        switch self {
        case .ipv4: "A"
        case .ipv6: "AAAA"
        }
    }
}

/// The address families a lookup asks for.
public struct AddressFamilies: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A records only.
    public static let ipv4 = AddressFamilies(rawValue: 1)
    /// AAAA records only.
    public static let ipv6 = AddressFamilies(rawValue: 2)
    /// A and AAAA in one lookup.
    public static let all: AddressFamilies = [.ipv4, .ipv6]

    /// The set holding exactly `family`.
    public init(_ family: AddressFamily) {
        self = family == .ipv4 ? .ipv4 : .ipv6
    }

    /// The families in the set, IPv4 first.
    public var members: [AddressFamily] {
        AddressFamily.allCases.filter { contains(AddressFamilies($0)) }
    }

    public var description: String {
        switch self {
        case .ipv4: "A"
        case .ipv6: "AAAA"
        case .all: "A+AAAA"
        default: "none"
        }
    }
}
