import HTTPDNSCore
import Testing

@Suite struct IPv4AddressTests {
    @Test func parsesAndFormatsDottedQuad() throws {
        let address = try #require(IPv4Address("192.0.2.1"))
        #expect(address.value == 0xC000_0201)
        #expect(address.description == "192.0.2.1")
        #expect(IPv4Address(0xFFFF_FFFF).description == "255.255.255.255")
        #expect(IPv4Address(0).description == "0.0.0.0")
    }

    @Test func inAddrIsInNetworkOrder() throws {
        let address = try #require(IPv4Address("192.0.2.1"))
        let bytes = withUnsafeBytes(of: address.inAddr) { Array($0) }
        #expect(bytes == [192, 0, 2, 1])
    }

    @Test(arguments: ["", "192.0.2", "192.0.2.1.5", "256.0.0.1", "192.0.2.-1", "a.b.c.d", " 192.0.2.1", "192.0.2.1 ", "::1", "example.com"])
    func rejectsAnythingButDottedQuad(input: String) {
        #expect(IPv4Address(input) == nil)
    }
}

@Suite struct IPv6AddressTests {
    @Test(arguments: [
        // RFC 5952 §4.1: leading zeros are dropped.
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
        // §4.3: lower case.
        ("2001:DB8::ABCD", "2001:db8::abcd"),
        // §4.2.1: the longest run of zeros is shortened.
        ("2001:db8:0:0:1:0:0:0", "2001:db8:0:0:1::"),
        // §4.2.2: a single zero field is not shortened.
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        // §4.2.3: of two equal runs, the first is shortened.
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("::", "::"),
        ("::1", "::1"),
        ("fe80::", "fe80::"),
        // §5: IPv4-mapped addresses use dotted decimal for the last 32 bits.
        ("::ffff:c000:0201", "::ffff:192.0.2.1"),
        ("::ffff:192.0.2.1", "::ffff:192.0.2.1"),
    ])
    func formatsAsRFC5952(input: String, expected: String) throws {
        let address = try #require(IPv6Address(input))
        #expect(address.description == expected)
    }

    @Test func storesTheBytesInNetworkOrder() throws {
        let address = try #require(IPv6Address("2001:db8::ff00:42:8329"))
        #expect(address.high == 0x2001_0db8_0000_0000)
        #expect(address.low == 0x0000_ff00_0042_8329)
        let bytes = withUnsafeBytes(of: address.in6Addr) { Array($0) }
        #expect(bytes == [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0xff, 0x00, 0x00, 0x42, 0x83, 0x29])
        #expect(IPv6Address(address.in6Addr) == address)
    }

    @Test(arguments: ["", "1", "192.0.2.1", "2001:db8::1::1", "2001:db8:::1", "12345::1", "g::1", "1:2:3:4:5:6:7:8:9", "[::1]", "fe80::1%eth0"])
    func rejectsInvalidText(input: String) {
        #expect(IPv6Address(input) == nil)
    }
}

@Suite struct IPAddressTests {
    @Test func parsesEitherFamily() throws {
        let four = try #require(IPAddress("192.0.2.1"))
        #expect(four == .v4(v4("192.0.2.1")))
        #expect(four.family == .ipv4)
        #expect(four.description == "192.0.2.1")

        let six = try #require(IPAddress("2001:DB8::1"))
        #expect(six == .v6(v6("2001:db8::1")))
        #expect(six.family == .ipv6)
        #expect(six.description == "2001:db8::1")
    }

    @Test(arguments: ["", "example.com", "192.0.2.256", "[2001:db8::1]", "2001:db8::1:53:"])
    func rejectsNonAddresses(input: String) {
        #expect(IPAddress(input) == nil)
    }
}

@Suite struct AddressFamilyTests {
    @Test func recordTypesAndNames() {
        #expect(AddressFamily.ipv4.recordType == 1)
        #expect(AddressFamily.ipv6.recordType == 28)
        #expect(AddressFamily.ipv4.description == "A")
        #expect(AddressFamily.ipv6.description == "AAAA")
    }

    @Test func familySets() {
        #expect(AddressFamilies.all.members == [.ipv4, .ipv6])
        #expect(AddressFamilies.ipv4.members == [.ipv4])
        #expect(AddressFamilies.ipv6.members == [.ipv6])
        #expect(AddressFamilies().members.isEmpty)
        #expect(AddressFamilies(.ipv4) == .ipv4)
        #expect(AddressFamilies(.ipv6) == .ipv6)
        #expect(AddressFamilies.all.description == "A+AAAA")
        #expect(AddressFamilies.ipv4.description == "A")
        #expect(AddressFamilies.ipv6.description == "AAAA")
        #expect(AddressFamilies().description == "none")
    }
}
