import HTTPDNSClient
import HTTPDNSCore
import Testing

@Suite struct SPKIPinTests {
    static let digest = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

    @Test func readsBase64WithOrWithoutThePrefixAndWritesItBack() throws {
        let bare = try SPKIPin(parsing: Self.digest)
        let prefixed = try SPKIPin(parsing: "sha256//" + Self.digest)
        #expect(bare == prefixed && bare.sha256.count == 32)
        #expect(bare.sha256.prefix(2) == [0xE3, 0xB0])
        #expect(bare.description == "sha256//" + Self.digest)
    }

    @Test(arguments: [
        "",
        "sha256//",
        "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuF",
        "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=",
        "sha1//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
        "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFUAAAA=",
        "not base64 at all!",
    ])
    func anythingElseIsRefusedNamingTheSetting(_ text: String) {
        let error = #expect(throws: ConfigurationError.self) { try SPKIPin(parsing: text) }
        #expect(error?.key == "pin")
        #expect(error?.reason.contains("not an SPKI SHA-256 pin") == true)
    }
}
