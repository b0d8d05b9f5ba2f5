import HTTPDNSCore

/// A request in the one form the interceptor resolves and sends (`shared/design/CANONICAL-REQUEST.md`): the URL
/// normalised on its parsed components, and the header defaults added.
///
/// Two modes: `standard` (the default) is the reference plus RFC 3986 §6 normalisation; `apple` reproduces Apple's
/// CustomHTTPProtocol sample exactly. Normalising a canonical request changes nothing.
public struct CanonicalRequest: Sendable, Hashable {
    /// Part of a URL's UTF-8 bytes, read in place.
    typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    public struct Configuration: Sendable, Hashable {
        public enum Mode: String, Sendable, Hashable {
            case standard
            case apple
        }

        public var mode: Mode
        /// The content codings the transport decodes for the caller, offered in `Accept-Encoding`; none, none
        /// offered. Never an encoding the caller would receive undecoded.
        public var decodedEncodings: [String] = []
        /// `Accept-Language` to add when the request has none. Nil (the default): `en-us` in `apple` mode (the
        /// reference's), none in `standard` mode.
        public var acceptLanguage: String?

        public init(mode: Mode = .standard) {
            self.mode = mode
        }

        /// The `Accept-Language` added to a request that has none.
        var defaultLanguage: String? { acceptLanguage ?? (mode == .apple ? "en-us" : nil) }
    }

    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public var method: String
    /// `http` or `https`.
    public var scheme: String
    public var userInfo: String?
    /// As written in the URL: lowercased, an IPv6 literal in brackets, a trailing dot kept.
    public var host: String
    public var port: Int?
    /// Never empty: at least `/`.
    public var path: String
    public var query: String?
    /// Kept in `apple` mode only: the fragment is never sent.
    public var fragment: String?
    /// The request's fields, then the defaults added, in that order.
    public var headers: [Header]

    /// The canonical URL.
    public var url: String {
        var text = ""
        text.reserveCapacity(scheme.utf8.count + host.utf8.count + path.utf8.count + (query?.utf8.count ?? 0) + (userInfo?.utf8.count ?? 0) + 16)
        // Appended piece by piece: `"?" + query` would build a string only to copy it.
        text += scheme
        text += "://"
        if let userInfo {
            text += userInfo
            text += "@"
        }
        text += host
        if let port {
            text += ":"
            text += String(port)
        }
        text += path
        if let query {
            text += "?"
            text += query
        }
        if let fragment {
            text += "#"
            text += fragment
        }
        return text
    }

    /// The Host header: the host, and the port only when it is not the scheme's default (RFC 9110 §7.2).
    public var hostHeader: String {
        guard let port, port != (scheme == "https" ? 443 : 80) else { return host }
        return "\(host):\(port)"
    }

    /// The name to resolve, without brackets and without a trailing dot (`a.example.` and `a.example` resolve once);
    /// nil when the host is an address literal.
    public var nameToResolve: String? {
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        guard !host.hasPrefix("["), IPv4Address(name) == nil else { return nil }
        return name
    }

    /// Normalises a request.
    /// - Parameters:
    ///   - method: the request's method, as given.
    ///   - url: the request's URL.
    ///   - headers: the request's fields, names in any case.
    ///   - hasBody: whether the request carries a body.
    /// - Returns: nil when the scheme is not http or https: such a request is the caller's to send untouched.
    /// - Throws: ``CanonicalRequestError`` for a URL that cannot be sent: not absolute, a control character or space,
    ///   a bad port, host or percent-escape, or (in `standard` mode) an empty host.
    public static func normalize(
        method: String,
        url: String,
        headers: [Header] = [],
        hasBody: Bool = false,
        configuration: Configuration = Configuration()
    ) throws(CanonicalRequestError) -> CanonicalRequest? {
        // Read in place from the string's own UTF-8 storage, not from a copy.
        var text = url
        let result = text.withUTF8 { bytes -> Result<CanonicalRequest?, CanonicalRequestError> in
            Result { () throws(CanonicalRequestError) -> CanonicalRequest? in
                try normalize(bytes, method: method, url: url, headers: headers, hasBody: hasBody, configuration: configuration)
            }
        }
        return try result.get()
    }

    private static func normalize(
        _ bytes: UnsafeBufferPointer<UInt8>,
        method: String,
        url: String,
        headers: [Header],
        hasBody: Bool,
        configuration: Configuration
    ) throws(CanonicalRequestError) -> CanonicalRequest? {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, isScheme(bytes[..<colon]) else {
            throw CanonicalRequestError(url: url, reason: "not an absolute URL: no scheme")
        }
        let scheme: String
        switch colon {
        case 4 where equalIgnoringASCIICase(bytes[..<colon], "http"): scheme = "http"
        case 5 where equalIgnoringASCIICase(bytes[..<colon], "https"): scheme = "https"
        default: return nil  // Not ours, whatever else it holds.
        }
        if let bad = bytes.firstIndex(where: { $0 < 0x21 || $0 == 0x7F }) {
            throw CanonicalRequestError(url: url, reason: "a space or control character at byte \(bad)")
        }
        let standard = configuration.mode == .standard

        // Reference step 2: `http:host` and `http:/host` are read as `http://host`.
        var rest = bytes[(colon + 1)...]
        if rest.starts(with: Array("//".utf8)) {
            rest = rest.dropFirst(2)
        } else if rest.first == UInt8(ascii: "/") {
            rest = rest.dropFirst()
        }
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let afterAuthority = rest[authorityEnd...]
        let fragmentStart = afterAuthority.firstIndex(of: UInt8(ascii: "#"))
        let beforeFragment = afterAuthority[..<(fragmentStart ?? afterAuthority.endIndex)]
        let queryStart = beforeFragment.firstIndex(of: UInt8(ascii: "?"))
        let rawPath = beforeFragment[..<(queryStart ?? beforeFragment.endIndex)]
        let rawQuery = queryStart.map { beforeFragment[($0 + 1)...] }
        let rawFragment = fragmentStart.map { afterAuthority[($0 + 1)...] }

        var userInfo: String?
        var hostPort = authority
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            userInfo = try component(authority[..<at], in: url, standard: standard, what: "user information")
            hostPort = authority[(at + 1)...]
        }
        var (host, port) = try hostAndPort(hostPort, in: url, standard: standard)
        if host.isEmpty {
            guard !standard else {
                throw CanonicalRequestError(url: url, reason: "the host is empty (RFC 9110 §4.2.1: an http URI needs one)")
            }
            host = "localhost"
        }

        var path = try component(rawPath, in: url, standard: standard, what: "path")
        if standard { path = removeDotSegments(path) }
        if path.isEmpty { path = "/" }
        var query: String?
        if let rawQuery { query = try component(rawQuery, in: url, standard: standard, what: "query") }
        var fragment: String?
        if let rawFragment, !standard { fragment = try component(rawFragment, in: url, standard: false, what: "fragment") }

        if let port, !(1...65535).contains(port) {
            throw CanonicalRequestError(url: url, reason: "port \(port) is out of range (1 to 65535)")
        }
        return CanonicalRequest(
            method: method,
            scheme: scheme,
            userInfo: userInfo,
            host: host,
            port: port,
            path: path,
            query: query,
            fragment: fragment,
            headers: withDefaults(headers, method: method, hasBody: hasBody, configuration: configuration)
        )
    }

    /// The request's fields with the reference's defaults added where the field is absent, never overwriting.
    static func withDefaults(_ headers: [Header], method: String, hasBody: Bool, configuration: Configuration) -> [Header] {
        // One pass over the request's fields for the four names (compared by length first: most fields are none of
        // them), then the defaults for those absent.
        var (accept, encoding, language, contentType) = (false, false, false, false)
        for header in headers {
            switch header.name.utf8.count {
            case 6: accept = accept || equalIgnoringASCIICase(header.name, "Accept")
            case 15:
                encoding = encoding || equalIgnoringASCIICase(header.name, "Accept-Encoding")
                language = language || equalIgnoringASCIICase(header.name, "Accept-Language")
            case 12: contentType = contentType || equalIgnoringASCIICase(header.name, "Content-Type")
            default: break
            }
        }
        var result = headers
        result.reserveCapacity(headers.count + 4)
        if !accept { result.append(Header("Accept", "*/*")) }
        if !encoding, !configuration.decodedEncodings.isEmpty {
            result.append(Header("Accept-Encoding", configuration.decodedEncodings.joined(separator: ", ")))
        }
        if !language, let value = configuration.defaultLanguage, !value.isEmpty { result.append(Header("Accept-Language", value)) }
        if !contentType, hasBody, equalIgnoringASCIICase(method, "POST") {
            result.append(Header("Content-Type", "application/x-www-form-urlencoded"))
        }
        return result
    }

    /// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1).
    private static func isScheme(_ bytes: Bytes) -> Bool {
        guard let first = bytes.first, isAlpha(first) else { return false }
        return bytes.allSatisfy { isAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    private static func hostAndPort(_ bytes: Bytes, in url: String, standard: Bool) throws(CanonicalRequestError) -> (String, Int?) {
        var hostBytes = bytes
        var portBytes: Bytes?
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else {
                throw CanonicalRequestError(url: url, reason: "an IPv6 literal without its closing ']'")
            }
            hostBytes = bytes[...close]
            let after = bytes[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { throw CanonicalRequestError(url: url, reason: "text after the IPv6 literal") }
                portBytes = after.dropFirst()
            }
        } else if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            hostBytes = bytes[..<colon]
            portBytes = bytes[(colon + 1)...]
        }
        var port: Int?
        if let portBytes, !portBytes.isEmpty {
            let digits = portBytes.drop { $0 == UInt8(ascii: "0") }
            guard portBytes.allSatisfy(isDigit), digits.count <= 5 else {
                throw CanonicalRequestError(url: url, reason: "'\(String(decoding: portBytes, as: UTF8.self))' is not a port number")
            }
            guard standard || digits.count == portBytes.count else {
                // The reference edits the URL's bytes and keeps a port as written: leading zeros cannot be kept here.
                throw CanonicalRequestError(url: url, reason: "the port '\(String(decoding: portBytes, as: UTF8.self))' has leading zeros")
            }
            port = Int(String(decoding: digits, as: UTF8.self)) ?? 0
        } else if portBytes != nil, !standard {
            throw CanonicalRequestError(url: url, reason: "an empty port (the reference keeps the ':', which this form cannot)")
        }
        // ASCII only: a byte above 0x7F is refused below, so lowercasing changes ASCII letters alone.
        let host =
            hostBytes.contains(where: { (0x41...0x5A).contains($0) })
            ? String(decoding: hostBytes.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
            : String(decoding: hostBytes, as: UTF8.self)
        if host.hasPrefix("[") {
            let literal = String(host.dropFirst().dropLast())
            guard let address = IPv6Address(literal) else {
                throw CanonicalRequestError(url: url, reason: "'\(literal)' is not an IPv6 address")
            }
            return (standard ? "[\(rfc5952(address))]" : host, port)
        }
        guard hostBytes.allSatisfy({ isAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") }) else {
            throw CanonicalRequestError(url: url, reason: "the host '\(host)' holds a character a host name cannot (internationalised names in their xn-- form)")
        }
        let name = hostBytes.last == UInt8(ascii: ".") ? hostBytes.dropLast() : hostBytes
        guard name.count <= 253 else { throw CanonicalRequestError(url: url, reason: "the host is longer than 253 bytes") }
        if name.isEmpty, !hostBytes.isEmpty {
            throw CanonicalRequestError(url: url, reason: "the host '\(host)' has an empty label")
        }
        if !name.isEmpty {
            // Labels of 1 to 63 bytes.
            var label = 0
            var valid = true
            for byte in name {
                if byte == UInt8(ascii: ".") {
                    if label == 0 { valid = false }
                    label = 0
                } else {
                    label += 1
                    if label > 63 { valid = false }
                }
            }
            guard valid, label > 0 else {
                throw CanonicalRequestError(url: url, reason: "the host '\(host)' has an empty label or one longer than 63 bytes")
            }
        }
        return (host, port)
    }

    /// RFC 5952 §4: lowercase, no leading zeros, the longest run of two or more zero groups (the first of equal ones)
    /// as "::", and dotted IPv4 only for an IPv4-mapped address (§5).
    static func rfc5952(_ address: IPv6Address) -> String {
        let groups = (0..<8).map { index -> UInt16 in
            let word = index < 4 ? address.high : address.low
            return UInt16(truncatingIfNeeded: word >> (48 - 16 * UInt64(index % 4)))
        }
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xFFFF {
            let v4 = address.low & 0xFFFF_FFFF
            return "::ffff:\(v4 >> 24).\(v4 >> 16 & 0xFF).\(v4 >> 8 & 0xFF).\(v4 & 0xFF)"
        }
        var bestStart = -1
        var bestLength = 1
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8, groups[end] == 0 { end += 1 }
            if end - index > bestLength {
                bestStart = index
                bestLength = end - index
            }
            index = end
        }
        func hex(_ range: Range<Int>) -> String { groups[range].map { String($0, radix: 16) }.joined(separator: ":") }
        guard bestStart >= 0 else { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }

    /// A path, query, fragment or user information, checked, and in `standard` mode with its percent-escapes
    /// normalised: hex digits in capitals, escapes of unreserved characters decoded (RFC 3986 §6.2.2.1–2).
    private static func component(_ bytes: Bytes, in url: String, standard: Bool, what: String) throws(CanonicalRequestError) -> String {
        // Most components have no escape and are ASCII: then they are taken as they are.
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte < 0x80 else {
                throw CanonicalRequestError(url: url, reason: "a byte that is not ASCII in the \(what): percent-encode it")
            }
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                index += 1
                continue
            }
            guard bytes.distance(from: index, to: bytes.endIndex) >= 3, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            else {
                throw CanonicalRequestError(url: url, reason: "a '%' in the \(what) that is not followed by two hex digits")
            }
            let decoded = high << 4 | low
            if !standard {
                output += bytes[index...(index + 2)]
            } else if isUnreserved(decoded) {
                output.append(decoded)
            } else {
                output += [UInt8(ascii: "%"), hexDigit(high), hexDigit(low)]
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// RFC 3986 §5.2.4.
    static func removeDotSegments(_ path: String) -> String {
        // No segment is "." or ".." unless a "." follows a "/" or starts the path.
        var previous = UInt8(ascii: "/")
        var dotAfterSlash = false
        for byte in path.utf8 {
            if byte == UInt8(ascii: "."), previous == UInt8(ascii: "/") {
                dotAfterSlash = true
                break
            }
            previous = byte
        }
        if !dotAfterSlash { return path }
        // Segment by segment over the bytes: each segment of the input is "/" and what follows up to the next "/".
        let input = Array(path.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var segmentStarts: [Int] = []
        var index = 0
        func isDot(_ at: Int) -> Bool { at < input.count && input[at] == UInt8(ascii: ".") }
        func endsSegment(_ at: Int) -> Bool { at == input.count || input[at] == UInt8(ascii: "/") }
        // A relative path's leading "./" and "../" (rule A).
        while true {
            if isDot(index), endsSegment(index + 1) {
                index = min(index + 2, input.count)
            } else if isDot(index), isDot(index + 1), endsSegment(index + 2) {
                index = min(index + 3, input.count)
            } else {
                break
            }
        }
        while index < input.count {
            let slash = input[index] == UInt8(ascii: "/")
            let body = slash ? index + 1 : index
            if slash, isDot(body), endsSegment(body + 1) {
                // "/." or "/./": the segment goes, the slash stays for what follows (rule B).
                index = body + 1
                if index == input.count { output.append(UInt8(ascii: "/")) }
            } else if slash, isDot(body), isDot(body + 1), endsSegment(body + 2) {
                // "/.." or "/../": the last output segment goes too (rule C).
                if let start = segmentStarts.popLast() { output.removeSubrange(start...) }
                index = body + 2
                if index == input.count { output.append(UInt8(ascii: "/")) }
            } else {
                var end = body
                while end < input.count, input[end] != UInt8(ascii: "/") { end += 1 }
                segmentStarts.append(output.count)
                output += input[index..<end]
                index = end
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func isAlpha(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlpha(byte) || isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x41 + value - 10 }
}

/// Whether `a` and `b` are equal, ASCII letters compared without case (HTTP field names and methods).
func equalIgnoringASCIICase(_ a: String, _ b: String) -> Bool {
    equalIgnoringASCIICase(a.utf8, b)
}

func equalIgnoringASCIICase(_ a: some Collection<UInt8>, _ b: String) -> Bool {
    let other = b.utf8
    guard a.count == other.count else { return false }
    var index = other.startIndex
    for x in a {
        let y = other[index]
        if x != y, !(x | 0x20 == y | 0x20 && (0x61...0x7A).contains(x | 0x20)) { return false }
        index = other.index(after: index)
    }
    return true
}

/// A URL the interceptor cannot send, and why.
public struct CanonicalRequestError: Error, Sendable, Hashable, CustomStringConvertible {
    public let url: String
    public let reason: String

    public var description: String { "cannot send '\(url)': \(reason)" }
}
