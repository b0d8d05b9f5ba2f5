import Crypto
import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HummingbirdTesting
import Testing

/// Accounts and signatures (docs/WIRE-FORMATS.md §1): every 403 row, both schemes.
@Suite struct AccountTests {
    static let now: Int64 = 1_800_000_000

    private func fixture() throws -> ServiceFixture {
        try ServiceFixture(NativeAPITests.dual, unixTime: Self.now) {
            $0.accounts = [
                "signed": .init(secret: "s3cret", requireSignature: true),
                "open": .init(secret: "open-secret", requireSignature: false),
                "legacy": .init(secret: "old", requireSignature: true, allowMD5Signature: true),
            ]
        }
    }

    private static func hmac(_ message: String, _ secret: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: SymmetricKey(data: Data(secret.utf8)))
            .map { String(format: "%02x", $0) }.joined()
    }

    private static func md5(_ message: String) -> String {
        Insecure.MD5.hash(data: Data(message.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    private func code(_ response: TestResponse) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any])?["code"] as? String
    }

    @Test func aValidSignatureIsAnswered() async throws {
        let t = Self.now + 300
        let s = Self.hmac("api.example.test-\(t)", "s3cret")
        try await fixture().test { client in
            let response = try await client.execute(uri: "/signed/sign_d?host=api.example.test&t=\(t)&s=\(s)", method: .get)
            #expect(response.status == .ok)
            #expect(response.text.contains("192.0.2.10"))
        }
    }

    @Test func aBatchIsSignedOverTheHostListAsGiven() async throws {
        let t = Self.now + 60
        let hosts = "api.example.test,v4.example.test"
        let s = Self.hmac("\(hosts)-\(t)", "s3cret")
        try await fixture().test { client in
            let response = try await client.execute(uri: "/signed/sign_resolve?host=\(hosts)&t=\(t)&s=\(s)", method: .get)
            #expect(response.status == .ok)
            #expect(response.text.hasPrefix(#"{"dns":["#))
        }
    }

    @Test func theMD5SchemeOnlyWhereEnabled() async throws {
        let t = Self.now + 60
        try await fixture().test { client in
            let legacy = Self.md5("api.example.test-old-\(t)")
            #expect(try await client.execute(uri: "/legacy/sign_d?host=api.example.test&t=\(t)&s=\(legacy)", method: .get).status == .ok)
            let forSigned = Self.md5("api.example.test-s3cret-\(t)")
            let refused = try await client.execute(uri: "/signed/sign_d?host=api.example.test&t=\(t)&s=\(forSigned)", method: .get)
            #expect(refused.status == .forbidden)
            #expect(code(refused) == "InvalidSignature")
        }
    }

    @Test func theRefusals() async throws {
        let valid = { (t: Int64) in Self.hmac("api.example.test-\(t)", "s3cret") }
        let rows: [(String, String)] = [
            ("/signed/sign_d?host=api.example.test&t=\(Self.now - 1)&s=\(valid(Self.now - 1))", "SignatureExpired"),
            ("/signed/sign_d?host=api.example.test&t=\(Self.now + 601)&s=\(valid(Self.now + 601))", "InvalidDuration"),
            ("/signed/sign_d?host=api.example.test&t=\(Self.now + 60)&s=\(valid(Self.now + 61))", "InvalidSignature"),
            ("/signed/sign_d?host=v4.example.test&t=\(Self.now + 60)&s=\(valid(Self.now + 60))", "InvalidSignature"),
            ("/nobody/sign_d?host=api.example.test&t=\(Self.now + 60)&s=\(valid(Self.now + 60))", "InvalidAccount"),
            ("/nobody/d?host=api.example.test", "InvalidAccount"),
            ("/signed/d?host=api.example.test", "UnsignedInterfaceDisabled"),
            ("/signed/resolve?host=api.example.test", "UnsignedInterfaceDisabled"),
        ]
        try await fixture().test { client in
            for (uri, expected) in rows {
                let response = try await client.execute(uri: uri, method: .get)
                #expect(response.status == .forbidden, "\(uri)")
                #expect(code(response) == expected, "\(uri)")
                #expect(!response.text.contains("s3cret"))
            }
            let missing = try await client.execute(uri: "/signed/sign_d?host=api.example.test&t=\(Self.now + 60)", method: .get)
            #expect(missing.status == .badRequest)
            #expect(code(missing) == "MissingArgument")
        }
    }

    /// Extreme expiries are refused as invalid, never computed with (an overflow would stop the process).
    @Test func extremeExpiriesAreRefusedNotComputed() async throws {
        try await fixture().test { client in
            for t in ["-9223372036854775808", "9223372036854775807", "0", "-1", "17179869180"] {
                let response = try await client.execute(uri: "/signed/sign_d?host=api.example.test&t=\(t)&s=00", method: .get)
                #expect(response.status == .forbidden, "t=\(t)")
                #expect(code(response) == "InvalidSignature", "t=\(t)")
            }
        }
    }

    @Test func anOpenAccountAnswersUnsigned() async throws {
        try await fixture().test { client in
            let response = try await client.execute(uri: "/open/d?host=api.example.test", method: .get)
            #expect(response.status == .ok)
        }
    }
}
