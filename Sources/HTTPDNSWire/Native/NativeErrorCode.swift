/// The stable `code` of the native API's error bodies (docs/WIRE-FORMATS.md §1). Clients branch on it; the message
/// beside it is for people and may change.
public struct NativeErrorCode: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// 400: a required parameter (`host`, `t`, `s`, `dns`) is missing.
    public static let missingArgument = NativeErrorCode(rawValue: "MissingArgument")
    /// 400: a host is not a valid host name.
    public static let invalidHost = NativeErrorCode(rawValue: "InvalidHost")
    /// 400: `query` (or JSON DNS's `type`) is not one the service answers.
    public static let invalidQuery = NativeErrorCode(rawValue: "InvalidQuery")
    /// 400: a batch names more hosts than the service allows.
    public static let tooManyHosts = NativeErrorCode(rawValue: "TooManyHosts")
    /// 400: a DoH message could not be parsed.
    public static let malformedQuery = NativeErrorCode(rawValue: "MalformedQuery")
    /// 403: the signature's expiry `t` is in the past.
    public static let signatureExpired = NativeErrorCode(rawValue: "SignatureExpired")
    /// 403: the signature's expiry `t` is further ahead than the service allows.
    public static let invalidDuration = NativeErrorCode(rawValue: "InvalidDuration")
    /// 403: the signature does not match.
    public static let invalidSignature = NativeErrorCode(rawValue: "InvalidSignature")
    /// 403: no such account.
    public static let invalidAccount = NativeErrorCode(rawValue: "InvalidAccount")
    /// 403: the account accepts signed requests only.
    public static let unsignedInterfaceDisabled = NativeErrorCode(rawValue: "UnsignedInterfaceDisabled")
    /// 405: the method is not allowed on this path.
    public static let methodNotAllowed = NativeErrorCode(rawValue: "MethodNotAllowed")
    /// 413: a DoH POST body is larger than the service takes.
    public static let bodyTooLarge = NativeErrorCode(rawValue: "BodyTooLarge")
    /// 414: the request target is longer than the service takes.
    public static let urlTooLong = NativeErrorCode(rawValue: "URLTooLong")
    /// 415: a DoH POST body is not `application/dns-message`.
    public static let unsupportedMediaType = NativeErrorCode(rawValue: "UnsupportedMediaType")
    /// 429: the client is over its rate; `Retry-After` says when to come back.
    public static let rateLimited = NativeErrorCode(rawValue: "RateLimited")
    /// 503: nothing cached and no upstream answered; `Retry-After` says when to come back.
    public static let upstreamUnavailable = NativeErrorCode(rawValue: "UpstreamUnavailable")

    public var description: String { rawValue }
}

/// The body of every error answer of the service: `{"code": …, "message": …}`.
public struct NativeErrorBody: Sendable, Hashable {
    public var code: NativeErrorCode
    public var message: String

    public init(code: NativeErrorCode, message: String) {
        self.code = code
        self.message = message
    }

    /// The body as JSON text.
    public var jsonText: String {
        JSON.object([("code", .string(code.rawValue)), ("message", .string(message))]).text
    }

    /// Reads an error body.
    /// - Throws: ``NativeFormatError`` when the bytes are not such an object.
    public init(parsingJSON bytes: some Collection<UInt8>) throws(NativeFormatError) {
        let object = try JSONValue.parseObject(bytes, what: "an error body")
        self.init(
            code: NativeErrorCode(rawValue: try object.string("code", in: "an error body")),
            message: try object.string("message", in: "an error body")
        )
    }
}
