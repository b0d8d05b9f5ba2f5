import Crypto
import Hummingbird

/// Checks the account and signature of the `/{account}/…` endpoints (WIRE-FORMATS.md §1).
///
/// Default scheme: `s = hex(HMAC-SHA256(key: secret, message: "<host>-<t>"))`, where `host` is the `host`
/// parameter as given (a comma-joined list for batches) and `t` the expiry in Unix seconds. The md5 scheme
/// `s = md5("<host>-<secret>-<t>")` is accepted only for accounts that enable it. Secrets never leave this type.
struct AccountAuthenticator: Sendable {
    let accounts: [String: HTTPDNSServerConfiguration.Account]
    let maxValiditySeconds: Int64
    /// Unix seconds now; injectable for tests.
    let now: @Sendable () -> Int64

    /// For the unsigned account endpoints.
    func authorizeUnsigned(account: String) throws {
        let account = try lookUp(account)
        if account.requireSignature {
            throw ServiceError.forbidden("UnsignedInterfaceDisabled", "this account accepts signed requests only (sign_d, sign_resolve)")
        }
    }

    /// For the signed account endpoints: `host`, `t` and `s` as given in the query.
    func authorizeSigned(account name: String, host: Substring, expiry: Substring?, signature: Substring?) throws {
        let account = try lookUp(name)
        guard let expiry else { throw ServiceError.missingArgument("t") }
        guard let signature else { throw ServiceError.missingArgument("s") }
        // Positive and bounded, so the arithmetic below cannot overflow whatever a client sends.
        guard let expiresAt = Int64(expiry), expiresAt > 0, expiresAt < Int64(UInt32.max) * 4 else {
            throw ServiceError.forbidden("InvalidSignature", "t must be the expiry in Unix seconds")
        }
        let now = self.now()
        guard expiresAt >= now else {
            throw ServiceError.forbidden("SignatureExpired", "the signature expired \(now - expiresAt) s ago")
        }
        guard expiresAt - now <= maxValiditySeconds else {
            throw ServiceError.forbidden(
                "InvalidDuration",
                "t is \(expiresAt - now) s ahead; at most \(maxValiditySeconds) s are allowed"
            )
        }
        let given = Array(signature.utf8)
        if Self.constantTimeEqual(given, Self.hmac(secret: account.secret, host: host, expiry: expiry)) { return }
        if account.allowMD5Signature, Self.constantTimeEqual(given, Self.md5(secret: account.secret, host: host, expiry: expiry)) { return }
        throw ServiceError.forbidden("InvalidSignature", "the signature does not match")
    }

    private func lookUp(_ name: String) throws -> HTTPDNSServerConfiguration.Account {
        guard let account = accounts[name] else {
            throw ServiceError.forbidden("InvalidAccount", "no such account")
        }
        return account
    }

    static func hmac(secret: String, host: Substring, expiry: Substring) -> [UInt8] {
        let code = HMAC<SHA256>.authenticationCode(
            for: Array("\(host)-\(expiry)".utf8),
            using: SymmetricKey(data: Array(secret.utf8))
        )
        return hex(Array(code))
    }

    static func md5(secret: String, host: Substring, expiry: Substring) -> [UInt8] {
        hex(Array(Insecure.MD5.hash(data: Array("\(host)-\(secret)-\(expiry)".utf8))))
    }

    private static func hex(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }

    /// Compares without stopping at the first difference, so timing does not reveal how much matched.
    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
