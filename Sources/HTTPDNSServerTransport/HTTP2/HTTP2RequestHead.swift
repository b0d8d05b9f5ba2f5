import HTTPTypes
import NIOHPACK

/// A request's header block, checked as RFC 9113 §8.2–8.3 asks: the pseudo-header fields a request must have,
/// once each and before the others, lowercase names, no fields that belong to an HTTP/1.1 connection, values without
/// line breaks or NULs, and pseudo-header values without spaces or other control characters. A block that fails is a
/// malformed request, answered with RST_STREAM.
struct HTTP2RequestHead {
    let method: String
    let scheme: String
    let path: String
    let authority: String?
    /// The `content-length` the client gave, which the DATA that follows must add up to.
    let contentLength: Int?
    private let fields: HPACKHeaders

    init(validating fields: HPACKHeaders) throws(HTTP2MalformedRequest) {
        var method: String?
        var scheme: String?
        var path: String?
        var authority: String?
        var contentLength: Int?
        var regularFieldSeen = false
        for (name, value, _) in fields {
            if name.utf8.first == UInt8(ascii: ":") {
                // Stricter than a regular field's value: no space or control character anywhere.
                guard Self.isValidPseudoHeaderValue(value) else {
                    throw HTTP2MalformedRequest("the value of \(name) has a space, a control character or DEL")
                }
                guard !regularFieldSeen else { throw HTTP2MalformedRequest("\(name) comes after a regular field") }
                switch name {
                case ":method": try Self.setOnce(&method, value, name)
                case ":scheme": try Self.setOnce(&scheme, value, name)
                case ":path": try Self.setOnce(&path, value, name)
                case ":authority": try Self.setOnce(&authority, value, name)
                default: throw HTTP2MalformedRequest("\(name) is not a request pseudo-header field")
                }
                continue
            }
            regularFieldSeen = true
            try Self.validateRegularField(name, value)
            switch name {
            case "content-length":
                guard Self.isDigits(value), let length = Int(value), contentLength == nil || contentLength == length else {
                    throw HTTP2MalformedRequest("content-length is not one non-negative number")
                }
                contentLength = length
            default:
                break
            }
        }
        guard let method, Self.isToken(method) else { throw HTTP2MalformedRequest(":method is missing or not a token") }
        guard let scheme, !scheme.isEmpty else { throw HTTP2MalformedRequest(":scheme is missing") }
        guard let path, path.utf8.first == UInt8(ascii: "/") || (path == "*" && method == "OPTIONS") else {
            throw HTTP2MalformedRequest(":path is missing, or neither starts with / nor is * for OPTIONS")
        }
        self.method = method
        self.scheme = scheme
        self.path = path
        self.authority = authority
        self.contentLength = contentLength
        self.fields = fields
    }

    /// Checks a trailer section (RFC 9113 §8.1): no pseudo-header fields, and every field as a request's regular
    /// fields are checked.
    static func validateTrailers(_ fields: HPACKHeaders) throws(HTTP2MalformedRequest) {
        for (name, value, _) in fields {
            guard name.utf8.first != UInt8(ascii: ":") else { throw HTTP2MalformedRequest("a pseudo-header field in the trailers") }
            try validateRegularField(name, value)
        }
    }

    /// A regular field: a lowercase token for a name, a value without line breaks, NULs or surrounding spaces, and not a
    /// field of HTTP/1.1 connections.
    private static func validateRegularField(_ name: String, _ value: String) throws(HTTP2MalformedRequest) {
        guard isValidValue(value) else { throw HTTP2MalformedRequest("the value of \(name) has a line break, a NUL or surrounding spaces") }
        guard isValidName(name) else { throw HTTP2MalformedRequest("the field name \(name) is not a lowercase token") }
        switch name {
        case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
            throw HTTP2MalformedRequest("\(name) is specific to HTTP/1.1 connections")
        case "te" where value != "trailers":
            throw HTTP2MalformedRequest("te may only be \"trailers\"")
        default:
            break
        }
    }

    /// The request as the router reads it.
    func httpRequest() -> HTTPRequest {
        var headerFields = HTTPFields()
        headerFields.reserveCapacity(fields.count)
        for (name, value, _) in fields where name.utf8.first != UInt8(ascii: ":") {
            // Valid by construction: the names were checked as tokens.
            if let name = HTTPField.Name(name) { headerFields.append(HTTPField(name: name, value: value)) }
        }
        return HTTPRequest(
            method: HTTPRequest.Method(method) ?? .get,
            scheme: scheme,
            authority: authority,
            path: path,
            headerFields: headerFields
        )
    }

    private static func setOnce(_ slot: inout String?, _ value: String, _ name: String) throws(HTTP2MalformedRequest) {
        guard slot == nil else { throw HTTP2MalformedRequest("\(name) appears twice") }
        slot = value
    }

    /// A token (RFC 9110 §5.6.2) without uppercase letters, as HTTP/2 field names must be.
    private static func isValidName(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { bytes in
            !bytes.isEmpty && bytes.allSatisfy { isTokenByte($0) && !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
        }
    }

    private static func isDigits(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func isToken(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in !bytes.isEmpty && bytes.allSatisfy(isTokenByte) }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// No control character, space or DEL anywhere: a pseudo-header field's value is a method, a scheme, or part of
    /// the target URI, none of which has them (RFC 9113 §8.3.1; swift-nio-http2 checks the same).
    private static func isValidPseudoHeaderValue(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in bytes.allSatisfy { $0 > 0x20 && $0 != 0x7F } }
    }

    /// No NUL, CR or LF anywhere, and no space or tab at either end (RFC 9113 §8.2.1).
    private static func isValidValue(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            if let first = bytes.first, first == 0x20 || first == 0x09 { return false }
            if let last = bytes.last, last == 0x20 || last == 0x09 { return false }
            for byte in bytes where byte == 0 || byte == 0x0A || byte == 0x0D { return false }
            return true
        }
    }
}

/// Why a request's header block was refused; logged, never sent (the client gets RST_STREAM).
struct HTTP2MalformedRequest: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
