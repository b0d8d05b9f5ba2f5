import HTTPDNSCore

/// A request in the one form the interceptor resolves and sends (docs/CANONICAL-REQUEST.md): the URL
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

    /// The request's header fields: those given, in their order, then the defaults added where a field was absent.
    /// The defaults are not copied into an array of their own: reading them costs nothing more than reading the
    /// fields given.
    public struct Fields: RandomAccessCollection, Sendable, Hashable, ExpressibleByArrayLiteral, CustomStringConvertible {
        let given: [Header]
        let accept: Bool
        let acceptEncoding: String?
        let acceptLanguage: String?
        let contentType: Bool

        init(given: [Header], accept: Bool = false, acceptEncoding: String? = nil, acceptLanguage: String? = nil, contentType: Bool = false) {
            self.given = given
            self.accept = accept
            self.acceptEncoding = acceptEncoding
            self.acceptLanguage = acceptLanguage
            self.contentType = contentType
        }

        /// Fields with no defaults added.
        public init(arrayLiteral elements: Header...) {
            self.init(given: elements)
        }

        public var startIndex: Int { 0 }
        public var endIndex: Int {
            given.count + (accept ? 1 : 0) + (acceptEncoding == nil ? 0 : 1) + (acceptLanguage == nil ? 0 : 1) + (contentType ? 1 : 0)
        }

        public subscript(position: Int) -> Header {
            if position < given.count { return given[position] }
            // The defaults in their fixed order, each counted only when added.
            var rest = position - given.count
            if accept {
                if rest == 0 { return Header("Accept", "*/*") }
                rest -= 1
            }
            if let acceptEncoding {
                if rest == 0 { return Header("Accept-Encoding", acceptEncoding) }
                rest -= 1
            }
            if let acceptLanguage {
                if rest == 0 { return Header("Accept-Language", acceptLanguage) }
                rest -= 1
            }
            precondition(contentType && rest == 0, "index \(position) is out of range")
            return Header("Content-Type", "application/x-www-form-urlencoded")
        }

        /// Equal when the fields are, whether given or added.
        public static func == (lhs: Fields, rhs: Fields) -> Bool { lhs.elementsEqual(rhs) }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(count)
            for field in self { hasher.combine(field) }
        }

        public var description: String { Array(self).description }
    }

    public let method: String
    /// The canonical URL: ASCII only. When the URL given was canonical already, this is that string itself.
    public let url: String
    /// The request's fields, then the defaults added, in that order.
    public let headers: Fields
    public let port: Int?
    private let isHTTPS: Bool
    // The components are read from `url` when asked for.
    private let layout: Layout

    /// Where the components are in a canonical URL, which is always written
    /// `scheme "://" [user-information "@"] host [":" port] path ["?" query] ["#" fragment]`: UTF-8 offsets, the
    /// rest implied. The user information ends before the `@` that ends before `hostStart`; the query is there when
    /// `queryEnd` is past `pathEnd`, and the fragment when the URL goes on past `queryEnd`.
    private struct Layout: Sendable, Hashable {
        var hostStart = 0
        var hostEnd = 0
        var pathStart = 0
        var pathEnd = 0
        var queryEnd = 0
    }

    /// `http` or `https`.
    public var scheme: String { isHTTPS ? "https" : "http" }
    public var userInfo: String? {
        let start = isHTTPS ? 8 : 7
        return layout.hostStart > start ? text(start..<(layout.hostStart - 1)) : nil
    }
    /// As written in the URL: lowercased, an IPv6 literal in brackets, a trailing dot kept.
    public var host: String { text(layout.hostStart..<layout.hostEnd) }
    /// Never empty: at least `/`.
    public var path: String { text(layout.pathStart..<layout.pathEnd) }
    public var query: String? { layout.queryEnd > layout.pathEnd ? text((layout.pathEnd + 1)..<layout.queryEnd) : nil }
    /// Kept in `apple` mode only: the fragment is never sent.
    public var fragment: String? {
        let end = url.utf8.count
        return end > layout.queryEnd ? text((layout.queryEnd + 1)..<end) : nil
    }

    private func text(_ range: Range<Int>) -> String {
        let utf8 = url.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: range.lowerBound)
        return String(url[start..<utf8.index(start, offsetBy: range.count)])
    }

    /// The Host header: the host, and the port only when it is not the scheme's default (RFC 9110 §7.2).
    public var hostHeader: String {
        guard let port, port != (isHTTPS ? 443 : 80) else { return host }
        return "\(host):\(port)"
    }

    /// The name to resolve, without brackets and without a trailing dot (`a.example.` and `a.example` resolve once);
    /// nil when the host is an address literal.
    public var nameToResolve: String? { Self.nameToResolve(host: host) }

    /// ``nameToResolve`` of a canonical request whose ``host`` is `host`.
    static func nameToResolve(host: String) -> String? {
        guard !host.hasPrefix("[") else { return nil }
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        // An IPv4 address ends in a digit; a name seldom does, so the address parser is seldom asked.
        if let last = name.utf8.last, (0x30...0x39).contains(last), IPv4Address(name) != nil { return nil }
        return name
    }

    /// Normalises a request.
    /// - Parameters:
    ///   - method: the request's method, as given.
    ///   - url: the request's URL.
    ///   - headers: the request's fields, names in any case.
    ///   - hasBody: whether the request carries a body.
    ///   - configuration: the mode, and the defaults added.
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
        let result = text.withUTF8 { bytes -> Result<URLParts?, CanonicalRequestError> in
            Result { () throws(CanonicalRequestError) -> URLParts? in try parse(bytes, url: url, standard: configuration.mode == .standard) }
        }
        guard let parts = try result.get() else { return nil }
        return CanonicalRequest(
            method: method,
            url: parts.url,
            headers: withDefaults(headers, method: method, hasBody: hasBody, configuration: configuration),
            port: parts.port,
            isHTTPS: parts.isHTTPS,
            layout: parts.layout
        )
    }

    /// A canonical URL and where its components are in it.
    private struct URLParts {
        var url: String
        var isHTTPS: Bool
        var port: Int?
        var layout = Layout()
    }

    /// A component of the canonical URL: the input's bytes where they are canonical already, else the bytes made.
    private enum Piece {
        case input(Range<Int>)
        case made([UInt8])

        var count: Int {
            switch self {
            case .input(let range): range.count
            case .made(let bytes): bytes.count
            }
        }

        var isInput: Bool {
            if case .input = self { return true }
            return false
        }

        /// Where the input's bytes are; only for a piece taken from the input.
        var range: Range<Int> {
            guard case .input(let range) = self else { preconditionFailure("a piece made, not taken from the input") }
            return range
        }

        static func text(_ text: String) -> Piece { .made(Array(text.utf8)) }
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, url: String, standard: Bool) throws(CanonicalRequestError) -> URLParts? {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, isScheme(bytes[..<colon]) else {
            throw CanonicalRequestError(.notAbsolute, url: url, reason: "not an absolute URL: no scheme")
        }
        let isHTTPS: Bool
        switch colon {
        case 4 where equalIgnoringASCIICase(bytes[..<colon], "http"): isHTTPS = false
        case 5 where equalIgnoringASCIICase(bytes[..<colon], "https"): isHTTPS = true
        default: return nil  // Not ours, whatever else it holds.
        }
        if let bad = bytes.firstIndex(where: { $0 < 0x21 || $0 == 0x7F }) {
            throw CanonicalRequestError(.invalidCharacter, url: url, reason: "a space or control character at byte \(bad)")
        }
        // The URL given is kept as the canonical one when nothing in it changes: this is that question's answer so far.
        var asGiven = !bytes[..<colon].contains { (0x41...0x5A).contains($0) }

        // Reference step 2: `http:host` and `http:/host` are read as `http://host`.
        var rest = bytes[(colon + 1)...]
        if rest.starts(with: "//".utf8) {
            rest = rest.dropFirst(2)
        } else {
            asGiven = false
            if rest.first == UInt8(ascii: "/") { rest = rest.dropFirst() }
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

        var userInfo: Piece?
        var hostPort = authority
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            userInfo = try component(authority[..<at], in: url, standard: standard, what: "user information")
            hostPort = authority[(at + 1)...]
        }
        var (host, port, portAsWritten) = try hostAndPort(hostPort, in: url, standard: standard)
        if host.count == 0 {
            guard !standard else {
                throw CanonicalRequestError(.invalidHost, url: url, reason: "the host is empty (RFC 9110 §4.2.1: an http URI needs one)")
            }
            host = .text("localhost")
        }
        if let port, !(1...65535).contains(port) {
            throw CanonicalRequestError(.invalidPort, url: url, reason: "port \(port) is out of range (1 to 65535)")
        }

        var path = try component(rawPath, in: url, standard: standard, what: "path")
        if standard {
            let removed =
                switch path {
                case .input(let range): removeDotSegments(bytes[range])
                case .made(let made): removeDotSegments(made)
                }
            if let removed { path = .made(removed) }
        }
        if path.count == 0 { path = .text("/") }
        var query: Piece?
        if let rawQuery { query = try component(rawQuery, in: url, standard: standard, what: "query") }
        var fragment: Piece?
        if let rawFragment {
            if standard {
                asGiven = false  // Never sent, so dropped.
            } else {
                fragment = try component(rawFragment, in: url, standard: false, what: "fragment")
            }
        }
        asGiven = asGiven && portAsWritten && host.isInput && path.isInput && (userInfo?.isInput ?? true) && (query?.isInput ?? true)
            && (fragment?.isInput ?? true)

        var parts = URLParts(url: url, isHTTPS: isHTTPS, port: port)
        if asGiven {
            parts.layout = Layout(
                hostStart: host.range.lowerBound,
                hostEnd: host.range.upperBound,
                pathStart: path.range.lowerBound,
                pathEnd: path.range.upperBound,
                queryEnd: query?.range.upperBound ?? path.range.upperBound
            )
            // Written out again, the URL is the one given, laid out the same: checked in debug builds, which the tests are.
            assert({
                var written = parts
                written.url = assemble(&written, from: bytes, userInfo, host, path, query, fragment)
                return written.url == url && written.layout == parts.layout
            }(), "\(url) was taken as canonical")
        } else {
            parts.url = assemble(&parts, from: bytes, userInfo, host, path, query, fragment)
        }
        return parts
    }

    /// The URL written from its components, where they are in it set in `parts`.
    private static func assemble(
        _ parts: inout URLParts,
        from input: UnsafeBufferPointer<UInt8>,
        _ userInfo: Piece?,
        _ host: Piece,
        _ path: Piece,
        _ query: Piece?,
        _ fragment: Piece?
    ) -> String {
        var portDigits: [UInt8] = []
        if let port = parts.port { portDigits = Array(String(port).utf8) }
        let length = (parts.isHTTPS ? 8 : 7) + (userInfo.map { $0.count + 1 } ?? 0) + host.count + (parts.port == nil ? 0 : portDigits.count + 1)
            + path.count + (query.map { $0.count + 1 } ?? 0) + (fragment.map { $0.count + 1 } ?? 0)
        var layout = Layout()
        let url = String(unsafeUninitializedCapacity: length) { output in
            var at = 0
            func write(_ bytes: some Collection<UInt8>) {
                at = output[at...].initialize(fromContentsOf: bytes)
            }
            func write(_ piece: Piece) -> Range<Int> {
                let start = at
                switch piece {
                case .input(let range): write(input[range])
                case .made(let bytes): write(bytes)
                }
                return start..<at
            }
            write((parts.isHTTPS ? "https://" : "http://").utf8)
            if let userInfo {
                _ = write(userInfo)
                write(CollectionOfOne(UInt8(ascii: "@")))
            }
            (layout.hostStart, layout.hostEnd) = (write(host).lowerBound, at)
            if !portDigits.isEmpty {
                write(CollectionOfOne(UInt8(ascii: ":")))
                write(portDigits)
            }
            (layout.pathStart, layout.pathEnd) = (write(path).lowerBound, at)
            if let query {
                write(CollectionOfOne(UInt8(ascii: "?")))
                _ = write(query)
            }
            layout.queryEnd = at
            if let fragment {
                write(CollectionOfOne(UInt8(ascii: "#")))
                _ = write(fragment)
            }
            return at
        }
        parts.layout = layout
        return url
    }

    /// The request's fields with the reference's defaults added where the field is absent, never overwriting.
    static func withDefaults(_ headers: [Header], method: String, hasBody: Bool, configuration: Configuration) -> Fields {
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
        let addedLanguage = language ? nil : configuration.defaultLanguage
        return Fields(
            given: headers,
            accept: !accept,
            acceptEncoding: encoding || configuration.decodedEncodings.isEmpty ? nil : configuration.decodedEncodings.joined(separator: ", "),
            acceptLanguage: addedLanguage?.isEmpty == false ? addedLanguage : nil,
            contentType: !contentType && hasBody && equalIgnoringASCIICase(method, "POST")
        )
    }

    /// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1).
    package static func isScheme(_ bytes: some Collection<UInt8>) -> Bool {
        guard let first = bytes.first, isAlpha(first) else { return false }
        return bytes.allSatisfy { isAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// The host, the port, and whether the port is written as the canonical URL writes it.
    private static func hostAndPort(_ bytes: Bytes, in url: String, standard: Bool) throws(CanonicalRequestError) -> (Piece, Int?, Bool) {
        var hostBytes = bytes
        var portBytes: Bytes?
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else {
                throw CanonicalRequestError(.invalidHost, url: url, reason: "an IPv6 literal without its closing ']'")
            }
            hostBytes = bytes[...close]
            let after = bytes[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else {
                    throw CanonicalRequestError(.invalidHost, url: url, reason: "text after the IPv6 literal")
                }
                portBytes = after.dropFirst()
            }
        } else if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            hostBytes = bytes[..<colon]
            portBytes = bytes[(colon + 1)...]
        }
        var port: Int?
        var portAsWritten = portBytes == nil
        if let portBytes, !portBytes.isEmpty {
            let digits = portBytes.drop { $0 == UInt8(ascii: "0") }
            guard portBytes.allSatisfy(isDigit), digits.count <= 5 else {
                throw CanonicalRequestError(.invalidPort, url: url, reason: "'\(String(decoding: portBytes, as: UTF8.self))' is not a port number")
            }
            guard standard || digits.count == portBytes.count else {
                // The reference edits the URL's bytes and keeps a port as written: leading zeros cannot be kept here.
                throw CanonicalRequestError(
                    .invalidPort,
                    url: url,
                    reason: "the port '\(String(decoding: portBytes, as: UTF8.self))' has leading zeros"
                )
            }
            port = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            portAsWritten = digits.count == portBytes.count
        } else if portBytes != nil, !standard {
            throw CanonicalRequestError(.invalidPort, url: url, reason: "an empty port (the reference keeps the ':', which this form cannot)")
        }
        if hostBytes.first == UInt8(ascii: "[") {
            let written = String(decoding: hostBytes, as: UTF8.self)
            let literal = String(written.dropFirst().dropLast())
            guard let address = IPv6Address(literal) else {
                throw CanonicalRequestError(.invalidHost, url: url, reason: "'\(literal)' is not an IPv6 address")
            }
            let canonical = standard ? "[\(rfc5952(address))]" : written.lowercased()
            return (canonical == written ? .input(hostBytes.startIndex..<hostBytes.endIndex) : .text(canonical), port, portAsWritten)
        }
        guard hostBytes.allSatisfy({ isAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") }) else {
            throw CanonicalRequestError(
                .invalidHost,
                url: url,
                reason: "the host '\(String(decoding: hostBytes, as: UTF8.self))' holds a character a host name cannot (internationalised names in their xn-- form)"
            )
        }
        let name = hostBytes.last == UInt8(ascii: ".") ? hostBytes.dropLast() : hostBytes
        guard name.count <= 253 else { throw CanonicalRequestError(.invalidHost, url: url, reason: "the host is longer than 253 bytes") }
        if name.isEmpty, !hostBytes.isEmpty {
            throw CanonicalRequestError(.invalidHost, url: url, reason: "the host '\(String(decoding: hostBytes, as: UTF8.self))' has an empty label")
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
                throw CanonicalRequestError(
                    .invalidHost,
                    url: url,
                    reason: "the host '\(String(decoding: hostBytes, as: UTF8.self))' has an empty label or one longer than 63 bytes"
                )
            }
        }
        // ASCII only (checked above), so lowercasing changes ASCII letters alone.
        guard hostBytes.contains(where: { (0x41...0x5A).contains($0) }) else {
            return (.input(hostBytes.startIndex..<hostBytes.endIndex), port, portAsWritten)
        }
        return (.made(hostBytes.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }), port, portAsWritten)
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
    private static func component(_ bytes: Bytes, in url: String, standard: Bool, what: String) throws(CanonicalRequestError) -> Piece {
        // One pass checks the bytes and asks whether an escape changes; most components have none and are taken as
        // they are.
        var changes = false
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte < 0x80 else {
                throw CanonicalRequestError(.invalidCharacter, url: url, reason: "a byte that is not ASCII in the \(what): percent-encode it")
            }
            guard byte == UInt8(ascii: "%") else {
                index += 1
                continue
            }
            guard bytes.distance(from: index, to: bytes.endIndex) >= 3, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            else {
                throw CanonicalRequestError(.invalidPercentEncoding, url: url, reason: "a '%' in the \(what) that is not followed by two hex digits")
            }
            if standard, isUnreserved(high << 4 | low) || bytes[index + 1] != hexDigit(high) || bytes[index + 2] != hexDigit(low) {
                changes = true
            }
            index += 3
        }
        guard changes else { return .input(bytes.startIndex..<bytes.endIndex) }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        index = bytes.startIndex
        while index < bytes.endIndex {
            guard bytes[index] == UInt8(ascii: "%") else {
                output.append(bytes[index])
                index += 1
                continue
            }
            // Checked above: two hex digits follow.
            let (high, low) = (hexValue(bytes[index + 1]) ?? 0, hexValue(bytes[index + 2]) ?? 0)
            let decoded = high << 4 | low
            if isUnreserved(decoded) {
                output.append(decoded)
            } else {
                output += [UInt8(ascii: "%"), hexDigit(high), hexDigit(low)]
            }
            index += 3
        }
        return .made(output)
    }

    /// RFC 3986 §5.2.4.
    /// - Returns: nil when the path has no dot segment, else the path without them.
    static func removeDotSegments(_ path: some Collection<UInt8>) -> [UInt8]? {
        // A segment that is "." or "..": between slashes (or the path's ends), one or two dots and nothing else.
        // `/.well-known` has none.
        var segmentLength = 0
        var onlyDots = true
        var hasDotSegment = false
        for byte in path {
            if byte == UInt8(ascii: "/") {
                if onlyDots, segmentLength > 0 {
                    hasDotSegment = true
                    break
                }
                (segmentLength, onlyDots) = (0, true)
            } else {
                segmentLength += 1
                onlyDots = onlyDots && byte == UInt8(ascii: ".") && segmentLength <= 2
            }
        }
        if !hasDotSegment, !(onlyDots && segmentLength > 0) { return nil }
        // Segment by segment over the bytes: each segment of the input is "/" and what follows up to the next "/".
        let input = Array(path)
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
        return output
    }

    package static func isAlpha(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    package static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
    /// ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 §2.3).
    package static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlpha(byte) || isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }
    package static func hexValue(_ byte: UInt8) -> UInt8? {
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
///
/// Compare errors by ``code``; the ``reason`` is for people and may change.
public struct CanonicalRequestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the part of the URL that cannot be sent (usable as a metric dimension). A
    /// struct, not an enum, so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case notAbsolute = "not_absolute"
            case invalidCharacter = "invalid_character"
            case invalidPercentEncoding = "invalid_percent_encoding"
            case invalidHost = "invalid_host"
            case invalidPort = "invalid_port"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The URL has no scheme: it is not absolute.
        public static let notAbsolute = Code(.notAbsolute)
        /// A space or control character anywhere in the URL, or a byte outside ASCII in its path, query, fragment or
        /// user information (which must be percent-encoded).
        public static let invalidCharacter = Code(.invalidCharacter)
        /// A `%` not followed by two hex digits.
        public static let invalidPercentEncoding = Code(.invalidPercentEncoding)
        /// The host is empty, longer than 253 bytes, has an empty or too long label, holds a character a host name
        /// cannot, or is an IPv6 literal that does not parse or close.
        public static let invalidHost = Code(.invalidHost)
        /// The port is empty, not a number, written with leading zeros, or outside 1 to 65535.
        public static let invalidPort = Code(.invalidPort)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`invalid_host`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// Which part of the URL cannot be sent.
    public let code: Code
    /// The URL as it was given.
    public let url: String
    /// What is wrong with it, in a sentence fragment.
    public let reason: String
    /// The error underneath, when there is one (normalising itself has none). Not compared or hashed: two errors
    /// are the same when their code, URL and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: which part of the URL cannot be sent.
    ///   - url: the URL as it was given.
    ///   - reason: what is wrong with it, in a sentence fragment.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, url: String, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.url = url
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "cannot send '\(url)': \(reason)" }

    public static func == (lhs: CanonicalRequestError, rhs: CanonicalRequestError) -> Bool {
        lhs.code == rhs.code && lhs.url == rhs.url && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(url)
        hasher.combine(reason)
    }
}
