/// A Cache-Control field (RFC 9111 §5.2) read into its directives: `token [ "=" ( token / quoted-string ) ]`,
/// comma-separated, names compared case-insensitively, empty list elements skipped (RFC 9110 §5.6.1).
///
/// Written as a plain byte-by-byte parser over the field's bytes, so it can be fuzzed: any input gives either the
/// directives or a ``CacheControlError`` that says where and what.
public struct CacheControl: Sendable, Hashable {
    public struct Directive: Sendable, Hashable {
        /// Lowercased.
        public let name: String
        /// The argument, unquoted, if any.
        public let argument: String?
    }

    public let directives: [Directive]

    /// Reads every line of the field, as if joined with commas.
    /// - Throws: ``CacheControlError`` saying what is wrong and where.
    public init(parsing lines: [String]) throws(CacheControlError) {
        var directives: [Directive] = []
        for line in lines { try Self.parse(Array(line.utf8), into: &directives) }
        self.directives = directives
    }

    public init(parsing line: String) throws(CacheControlError) {
        try self.init(parsing: [line])
    }

    /// Whether a directive named `name` (any case) is present.
    public func contains(_ name: String) -> Bool {
        directives.contains { equalIgnoringASCIICase($0.name, name) }
    }

    /// The argument of the first directive named `name`, as delta-seconds (RFC 9111 §1.2.2): a number of at most
    /// 2^31 seconds, larger ones taken as 2^31. Nil when absent or not a number.
    public func deltaSeconds(_ name: String) -> Int? {
        let name = name.lowercased()
        guard let argument = directives.first(where: { $0.name == name })?.argument, !argument.isEmpty,
            argument.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        let digits = argument.drop { $0 == "0" }
        guard digits.utf8.count <= 10, let seconds = Int64(digits.isEmpty ? "0" : String(digits)) else { return 1 << 31 }
        return Int(min(seconds, 1 << 31))
    }

    private static func parse(_ bytes: [UInt8], into directives: inout [Directive]) throws(CacheControlError) {
        var index = 0
        func skipWhitespace() { while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 } }
        func token() -> [UInt8] {
            let start = index
            while index < bytes.count, isTokenCharacter(bytes[index]) { index += 1 }
            return Array(bytes[start..<index])
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { return }
            if bytes[index] == 0x2C {  // an empty element
                index += 1
                continue
            }
            let name = token()
            guard !name.isEmpty else { throw CacheControlError(.missingName, offset: index, reason: "expected a directive name") }
            skipWhitespace()
            var argument: String?
            if index < bytes.count, bytes[index] == 0x3D {  // "="
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == 0x22 {  // a quoted string
                    index += 1
                    var value: [UInt8] = []
                    var closed = false
                    while index < bytes.count {
                        let byte = bytes[index]
                        index += 1
                        if byte == 0x22 {
                            closed = true
                            break
                        }
                        if byte == 0x5C {  // quoted-pair: HTAB, SP, VCHAR or obs-text
                            guard index < bytes.count else { break }
                            let escaped = bytes[index]
                            guard !(escaped < 0x20 && escaped != 0x09 || escaped == 0x7F) else {
                                throw CacheControlError(.controlCharacter, offset: index, reason: "a control character in a quoted string")
                            }
                            value.append(escaped)
                            index += 1
                        } else if byte < 0x20 && byte != 0x09 || byte == 0x7F {
                            throw CacheControlError(.controlCharacter, offset: index - 1, reason: "a control character in a quoted string")
                        } else {
                            value.append(byte)
                        }
                    }
                    guard closed else {
                        throw CacheControlError(.unterminatedString, offset: bytes.count, reason: "a quoted string that does not end")
                    }
                    argument = String(decoding: value, as: UTF8.self)
                } else {
                    let value = token()
                    guard !value.isEmpty else { throw CacheControlError(.missingValue, offset: index, reason: "expected a value after '='") }
                    argument = String(decoding: value, as: UTF8.self)
                }
                skipWhitespace()
            }
            let lowered = name.contains(where: { (0x41...0x5A).contains($0) }) ? name.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 } : name
            directives.append(Directive(name: String(decoding: lowered, as: UTF8.self), argument: argument))
            guard index < bytes.count else { return }
            guard bytes[index] == 0x2C else { throw CacheControlError(.missingSeparator, offset: index, reason: "expected ',' between directives") }
            index += 1
        }
    }

    /// tchar (RFC 9110 §5.6.2).
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}

/// A Cache-Control field that is not the RFC 9111 grammar.
///
/// Compare errors by ``code``; the ``reason`` is for people and may change.
public struct CacheControlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for what the grammar expected (usable as a metric dimension). A struct, not an
    /// enum, so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case missingName = "missing_name"
            case missingValue = "missing_value"
            case missingSeparator = "missing_separator"
            case controlCharacter = "control_character"
            case unterminatedString = "unterminated_string"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A directive without a name (a token), where one should start.
        public static let missingName = Code(.missingName)
        /// An `=` not followed by a token or a quoted string.
        public static let missingValue = Code(.missingValue)
        /// Two directives without a `,` between them.
        public static let missingSeparator = Code(.missingSeparator)
        /// A control character inside a quoted string.
        public static let controlCharacter = Code(.controlCharacter)
        /// A quoted string that does not end.
        public static let unterminatedString = Code(.unterminatedString)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`missing_separator`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What the grammar expected.
    public let code: Code
    /// The byte offset in the line where it went wrong.
    public let offset: Int
    /// What was wrong, in a sentence fragment.
    public let reason: String
    /// The error underneath, when there is one (parsing itself has none). Not compared or hashed: two errors are
    /// the same when their code, offset and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: what the grammar expected.
    ///   - offset: the byte offset in the line where it went wrong.
    ///   - reason: what was wrong, in a sentence fragment.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, offset: Int, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.offset = offset
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "invalid Cache-Control at byte \(offset): \(reason)" }

    public static func == (lhs: CacheControlError, rhs: CacheControlError) -> Bool {
        lhs.code == rhs.code && lhs.offset == rhs.offset && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(offset)
        hasher.combine(reason)
    }
}
