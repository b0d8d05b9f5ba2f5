import HTTPDNSWire
import Hummingbird

/// Checks the account and signature of the `/{account}/…` endpoints (docs/WIRE-FORMATS.md §1).
///
/// Signatures are ``RequestSignature``'s: HMAC-SHA256 by default, md5 only for accounts that enable it. Secrets
/// never leave this type.
struct AccountAuthenticator: Sendable {
    let accounts: [String: HTTPDNSServerConfiguration.Account]
    let maxValiditySeconds: Int64
    /// Unix seconds now; injectable for tests.
    let now: @Sendable () -> Int64

    /// For the unsigned account endpoints.
    func authorizeUnsigned(account: String) throws {
        let account = try lookUp(account)
        if account.requireSignature {
            throw ServiceError.forbidden(.unsignedInterfaceDisabled, "this account accepts signed requests only (sign_d, sign_resolve)")
        }
    }

    /// For the signed account endpoints: `host`, `t` and `s` as given in the query.
    func authorizeSigned(account name: String, host: Substring, expiry: Substring?, signature: Substring?) throws {
        let account = try lookUp(name)
        guard let expiry else { throw ServiceError.missingArgument("t") }
        guard let signature else { throw ServiceError.missingArgument("s") }
        // Positive and bounded, so the arithmetic below cannot overflow whatever a client sends.
        guard let expiresAt = Int64(expiry), expiresAt > 0, expiresAt < Int64(UInt32.max) * 4 else {
            throw ServiceError.forbidden(.invalidSignature, "t must be the expiry in Unix seconds")
        }
        let now = self.now()
        guard expiresAt >= now else {
            throw ServiceError.forbidden(.signatureExpired, "the signature expired \(now - expiresAt) s ago")
        }
        guard expiresAt - now <= maxValiditySeconds else {
            throw ServiceError.forbidden(
                .invalidDuration,
                "t is \(expiresAt - now) s ahead; at most \(maxValiditySeconds) s are allowed"
            )
        }
        let secret = account.secret
        if RequestSignature.isValid(signature, host: host, expiry: expiry, secret: secret, scheme: .hmacSHA256) { return }
        if account.allowMD5Signature, RequestSignature.isValid(signature, host: host, expiry: expiry, secret: secret, scheme: .md5) { return }
        throw ServiceError.forbidden(.invalidSignature, "the signature does not match")
    }

    private func lookUp(_ name: String) throws -> HTTPDNSServerConfiguration.Account {
        guard let account = accounts[name] else {
            throw ServiceError.forbidden(.invalidAccount, "no such account")
        }
        return account
    }
}
