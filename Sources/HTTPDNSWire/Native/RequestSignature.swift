import Crypto

/// The signatures of the native API's signed endpoints (`/{account}/sign_d`, `/{account}/sign_resolve`,
/// docs/WIRE-FORMATS.md §1), as pure functions: the service checks them, a client makes them.
///
/// - ``Scheme/hmacSHA256`` (the default): `s = hex(HMAC-SHA256(key: secret, message: "<host>-<t>"))`.
/// - ``Scheme/md5`` (for old clients, off unless an account allows it): `s = hex(md5("<host>-<secret>-<t>"))`.
///
/// `host` is the `host` parameter exactly as sent (the comma-joined list for a batch) and `t` the expiry in Unix
/// seconds, as sent.
public enum RequestSignature {
    /// How a signature is made.
    public enum Scheme: Sendable, Hashable {
        case hmacSHA256
        case md5
    }

    /// The signature of `host` and `expiry` with `secret`, as lowercase hexadecimal.
    public static func sign(host: some StringProtocol, expiry: some StringProtocol, secret: String, scheme: Scheme = .hmacSHA256) -> String {
        String(decoding: signature(host: host, expiry: expiry, secret: secret, scheme: scheme), as: UTF8.self)
    }

    /// Whether `signature` is the one `scheme` makes for `host`, `expiry` and `secret`. The comparison does not
    /// stop at the first difference, so its time does not tell how much of a guess was right.
    public static func isValid(
        _ signature: some StringProtocol,
        host: some StringProtocol,
        expiry: some StringProtocol,
        secret: String,
        scheme: Scheme
    ) -> Bool {
        let expected = Self.signature(host: host, expiry: expiry, secret: secret, scheme: scheme)
        let given = Array(signature.utf8)
        guard given.count == expected.count else { return false }
        var difference: UInt8 = 0
        for index in given.indices { difference |= given[index] ^ expected[index] }
        return difference == 0
    }

    private static func signature(host: some StringProtocol, expiry: some StringProtocol, secret: String, scheme: Scheme) -> [UInt8] {
        switch scheme {
        case .hmacSHA256:
            let code = HMAC<SHA256>.authenticationCode(
                for: Array("\(host)-\(expiry)".utf8),
                using: SymmetricKey(data: Array(secret.utf8))
            )
            return hex(Array(code))
        case .md5:
            return hex(Array(Insecure.MD5.hash(data: Array("\(host)-\(secret)-\(expiry)".utf8))))
        }
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
}
