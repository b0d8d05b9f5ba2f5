#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 address, stored in host byte order.
public struct IPv4Address: Sendable, Hashable, CustomStringConvertible {
    /// The address as a 32-bit number, most significant octet first (`192.0.2.1` is `0xC000_0201`).
    public let value: UInt32

    public init(_ value: UInt32) { self.value = value }

    /// Parses dotted-quad notation (`192.0.2.1`); returns nil for anything else.
    public init?(_ string: String) {
        var address = in_addr()
        guard inet_pton(AF_INET, string, &address) == 1 else { return nil }
        self.value = UInt32(bigEndian: address.s_addr)
    }

    /// The address as `in_addr`, in network byte order.
    public var inAddr: in_addr { in_addr(s_addr: value.bigEndian) }

    public var description: String {
        "\(value >> 24).\((value >> 16) & 0xFF).\((value >> 8) & 0xFF).\(value & 0xFF)"
    }
}

/// An IPv6 address: 16 bytes in network order.
public struct IPv6Address: Sendable, Hashable, CustomStringConvertible {
    /// The high and low 64 bits of the address.
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses any RFC 4291 text form (`2001:db8::1`, `::ffff:192.0.2.1`); returns nil for anything else.
    public init?(_ string: String) {
        var address = in6_addr()
        guard inet_pton(AF_INET6, string, &address) == 1 else { return nil }
        self.init(address)
    }

    /// Reads an `in6_addr`.
    public init(_ address: in6_addr) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        withUnsafeBytes(of: address) { bytes in
            for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
            for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
        }
        self.init(high: high, low: low)
    }

    /// The address as `in6_addr`.
    public var in6Addr: in6_addr {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { bytes in
            for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index)) }
            for index in 0..<8 { bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index)) }
        }
        return address
    }

    /// The RFC 5952 text form (`2001:db8::1`).
    public var description: String {
        var address = in6Addr
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "::" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An IPv4 or IPv6 address.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(IPv4Address)
    case v6(IPv6Address)

    /// Parses an IPv4 or IPv6 literal (without brackets); returns nil for anything else.
    public init?(_ string: String) {
        if let v4 = IPv4Address(string) {
            self = .v4(v4)
        } else if let v6 = IPv6Address(string) {
            self = .v6(v6)
        } else {
            return nil
        }
    }

    /// The family of the address.
    public var family: AddressFamily {
        switch self {
        case .v4: .ipv4
        case .v6: .ipv6
        }
    }

    public var description: String {
        switch self {
        case .v4(let address): address.description
        case .v6(let address): address.description
        }
    }
}
