import HTTPDNSCore
import Testing

@Suite struct HostNameTests {
    @Test(arguments: [
        ("example.com", "example.com"),
        ("Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("localhost", "localhost"),
        ("a", "a"),
        ("a-b.c-d.example", "a-b.c-d.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("123.example", "123.example"),
        ("1a.2b", "1a.2b"),
        ("host-1.example.42x", "host-1.example.42x"),
    ])
    func validNamesAreNormalised(input: String, normalised: String) throws {
        let name = try HostName(input)
        #expect(name.value == normalised)
        #expect(name.description == normalised)
        #expect(name.fullyQualified == normalised + ".")
    }

    @Test func namesThatDifferOnlyInCaseOrTrailingDotAreEqual() throws {
        let names = try ["EXAMPLE.com", "example.COM.", "example.com"].map { try HostName($0) }
        #expect(Set(names).count == 1)
    }

    @Test func nameOf253BytesIsAccepted() throws {
        // 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 bytes.
        let name =
            [String](repeating: String(repeating: "a", count: 63), count: 3).joined(separator: ".")
            + "." + String(repeating: "b", count: 61)
        #expect(name.utf8.count == 253)
        #expect(try HostName(name).value == name)
        // The trailing dot does not count towards the limit.
        #expect(try HostName(name + ".").value == name)
    }

    @Test func nameOf254BytesIsRejected() {
        let name =
            [String](repeating: String(repeating: "a", count: 63), count: 3).joined(separator: ".")
            + "." + String(repeating: "b", count: 62)
        #expect(name.utf8.count == 254)
        let error = #expect(throws: HostNameError.self) { try HostName(name) }
        #expect(error?.name == name)
        #expect(error?.reason.contains("254 bytes") == true)
    }

    @Test func labelOf63BytesIsAcceptedAnd64Rejected() throws {
        let ok = String(repeating: "x", count: 63) + ".example"
        #expect(try HostName(ok).value == ok)
        let tooLong = "a." + String(repeating: "x", count: 64) + ".example"
        let error = #expect(throws: HostNameError.self) { try HostName(tooLong) }
        #expect(error?.reason.contains("label 2 is 64 bytes") == true)
    }

    @Test(arguments: [
        ("", "empty"),
        (".", "only a dot"),
        ("a..b", "label 2 is empty"),
        (".example", "label 1 is empty"),
        ("example.com..", "label 3 is empty"),
        ("-a.example", "label 1 starts or ends with a hyphen"),
        ("a-.example", "label 1 starts or ends with a hyphen"),
        ("a.-b", "label 2 starts or ends with a hyphen"),
        ("a_b.example", "'_'"),
        ("a b.example", "byte 0x20"),
        ("bücher.example", "byte 0xc3"),
        ("example.com/", "'/'"),
        ("1.2.3.4", "last label is all digits"),
        ("example.123", "last label is all digits"),
        ("192.0.2.1.", "last label is all digits"),
    ])
    func invalidNamesAreRejectedWithAReason(input: String, reasonFragment: String) {
        let error = #expect(throws: HostNameError.self) { try HostName(input) }
        #expect(error?.name == input)
        #expect(error?.reason.contains(reasonFragment) == true, "reason: \(error?.reason ?? "none")")
        #expect(error?.description.contains("'\(input)'") == true, "description: \(error?.description ?? "none")")
    }
}
