import HTTPDNSCore
import Testing

@Suite struct DNSServerAddressTests {
    @Test(arguments: [
        ("192.0.2.53", "192.0.2.53", 53, "192.0.2.53:53"),
        ("192.0.2.53:5353", "192.0.2.53", 5353, "192.0.2.53:5353"),
        ("192.0.2.53:1", "192.0.2.53", 1, "192.0.2.53:1"),
        ("192.0.2.53:65535", "192.0.2.53", 65535, "192.0.2.53:65535"),
        ("2001:db8::53", "2001:db8::53", 53, "[2001:db8::53]:53"),
        ("::1", "::1", 53, "[::1]:53"),
        ("[2001:db8::53]:5353", "2001:db8::53", 5353, "[2001:db8::53]:5353"),
        ("[2001:DB8::53]", "2001:db8::53", 53, "[2001:db8::53]:53"),
    ])
    func parsesServerAddresses(text: String, ip: String, port: Int, description: String) throws {
        let server = try DNSServerAddress(parsing: text)
        #expect(server.ip == IPAddress(ip))
        #expect(Int(server.port) == port)
        #expect(server.description == description)
        // The description parses back to the same address.
        #expect(try DNSServerAddress(parsing: server.description) == server)
    }

    @Test func defaultPortIs53() throws {
        #expect(DNSServerAddress(ip: .v4(v4("192.0.2.1"))).port == 53)
    }

    @Test(arguments: [
        ("192.0.2.53:0", "not a port number"),
        ("192.0.2.53:65536", "not a port number"),
        ("192.0.2.53:", "not a port number"),
        ("192.0.2.53:dns", "not a port number"),
        ("[2001:db8::53]:0", "not a port number"),
        ("[2001:db8::53]:70000", "not a port number"),
        ("[2001:db8::53", "no matching ']'"),
        ("[2001:db8::53]53", "expected ':PORT'"),
        ("dns.example", "never by name"),
        ("dns.example:53", "never by name"),
        ("[dns.example]:53", "never by name"),
        ("localhost", "never by name"),
        ("", "not an IPv4 or IPv6 address"),
        ("192.0.2.256", "not an IPv4 or IPv6 address"),
    ])
    func rejectsInvalidServers(text: String, reasonFragment: String) {
        let error = #expect(throws: DNSServerAddressError.self) { try DNSServerAddress(parsing: text) }
        #expect(error?.text == text)
        #expect(error?.reason.contains(reasonFragment) == true, "reason: \(error?.reason ?? "none")")
    }
}
