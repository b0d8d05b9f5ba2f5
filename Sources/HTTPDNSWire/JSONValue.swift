/// A parsed JSON value (RFC 8259), for reading what the service and configuration files send: strict, bounded in
/// depth, and telling booleans, numbers and strings apart.
///
/// Object members keep their order; a name given twice is an error rather than a silent choice of one.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The deepest nesting of arrays and objects accepted: far more than any answer needs, and few enough that
    /// parsing cannot exhaust the stack.
    public static let maxDepth = 64

    /// Parses one JSON text: a value with nothing but white space around it.
    /// - Throws: ``JSONParseError`` with the byte offset and what was wrong.
    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        let bytes = Array(bytes)
        // RFC 8259 §8.1: JSON text is UTF-8. Anything else is refused, not repaired.
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw JSONParseError(.invalidUTF8, offset: 0, reason: "the text is not valid UTF-8")
        }
        var parser = JSONParser(bytes)
        self = try parser.document()
    }

    /// The kind of value, for error messages: `a string`, `a number`, …
    public var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON object: its members in the order written, names unique.
public struct JSONObject: Sendable, Hashable {
    public private(set) var members: [(name: String, value: JSONValue)]
    private var index: [String: Int]

    init(members: [(name: String, value: JSONValue)], index: [String: Int]) {
        self.members = members
        self.index = index
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.elementsEqual(rhs.members) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for member in members {
            hasher.combine(member.name)
            hasher.combine(member.value)
        }
    }

    /// The member named `name`, if there is one.
    public subscript(name: String) -> JSONValue? {
        index[name].map { members[$0].value }
    }

    /// The members' names, in order.
    public var names: [String] { members.map(\.name) }
}

/// JSON that could not be parsed: where, and what was wrong.
///
/// Compare errors by ``code``; the ``reason`` is for people and may change.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the kind of fault (usable as a metric dimension). A struct, not an enum,
    /// so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case invalidUTF8 = "invalid_utf8"
            case unexpectedEnd = "unexpected_end"
            case unexpectedCharacter = "unexpected_character"
            case invalidString = "invalid_string"
            case invalidNumber = "invalid_number"
            case duplicateMember = "duplicate_member"
            case tooDeep = "too_deep"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The text is not UTF-8 (RFC 8259 §8.1).
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// The text ends inside a value: an object, an array, a string or an escape not closed.
        public static let unexpectedEnd = Code(.unexpectedEnd)
        /// A byte the grammar does not allow where it stands: something after the value, a missing `:` or `,`, a
        /// misspelt `true`, `false` or `null`.
        public static let unexpectedCharacter = Code(.unexpectedCharacter)
        /// A string holds a control character, an unknown escape, a bad `\u` escape or an unpaired surrogate.
        public static let invalidString = Code(.invalidString)
        /// A number without digits where it needs them, or too large to hold.
        public static let invalidNumber = Code(.invalidNumber)
        /// An object names a member twice.
        public static let duplicateMember = Code(.duplicateMember)
        /// Arrays and objects nested deeper than `JSONValue.maxDepth`.
        public static let tooDeep = Code(.tooDeep)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`unexpected_end`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What kind of fault this is.
    public let code: Code
    /// The byte offset where parsing stopped.
    public let offset: Int
    /// What was wrong, in a sentence fragment. It may quote the text; ``redactedDescription`` does not.
    public let reason: String
    /// The error underneath, when there is one (parsing itself has none). Not compared or hashed: two errors are
    /// the same when their code, offset and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: what kind of fault this is.
    ///   - offset: the byte offset where parsing stopped.
    ///   - reason: what was wrong, in a sentence fragment.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, offset: Int, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.offset = offset
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }

    /// Where, without what: for text that may hold secrets, whose characters must not reach a log.
    public var redactedDescription: String { "invalid JSON at byte \(offset)" }

    public static func == (lhs: JSONParseError, rhs: JSONParseError) -> Bool {
        lhs.code == rhs.code && lhs.offset == rhs.offset && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(offset)
        hasher.combine(reason)
    }
}

private struct JSONParser {
    private let bytes: [UInt8]
    private var offset = 0
    private var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try value()
        skipWhitespace()
        guard offset == bytes.count else { throw error(.unexpectedCharacter, "unexpected \(describe(bytes[offset])) after the value") }
        return value
    }

    private func error(_ code: JSONParseError.Code, _ reason: String) -> JSONParseError { JSONParseError(code, offset: offset, reason: reason) }

    /// `code`, or ``JSONParseError/Code/unexpectedEnd`` when the text has ended.
    private func error(orEnd code: JSONParseError.Code, _ reason: String) -> JSONParseError {
        error(offset < bytes.count ? code : .unexpectedEnd, reason)
    }

    private func describe(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
    }

    private mutating func value() throws(JSONParseError) -> JSONValue {
        guard offset < bytes.count else { throw error(.unexpectedEnd, "the text ends where a value should be") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return .object(try object())
        case UInt8(ascii: "["): return .array(try array())
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error(.unexpectedCharacter, "unexpected \(describe(bytes[offset])) where a value should be")
        }
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard offset + count <= bytes.count,
            bytes[offset..<(offset + count)].elementsEqual(UnsafeBufferPointer(start: word.utf8Start, count: count))
        else {
            // The text ending inside the word is an end, not a wrong byte.
            let rest = bytes[offset...]
            let isCut = rest.count < count && rest.elementsEqual(UnsafeBufferPointer(start: word.utf8Start, count: rest.count))
            throw error(isCut ? .unexpectedEnd : .unexpectedCharacter, "expected \(word)")
        }
        offset += count
        return value
    }

    private mutating func nest() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONValue.maxDepth else { throw error(.tooDeep, "nested deeper than \(JSONValue.maxDepth) levels") }
    }

    private mutating func object() throws(JSONParseError) -> JSONObject {
        try nest()
        offset += 1
        var members: [(name: String, value: JSONValue)] = []
        var index: [String: Int] = [:]
        var seen: Set<[UInt8]> = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            depth -= 1
            return JSONObject(members: members, index: index)
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                throw error(orEnd: .unexpectedCharacter, "expected a member name in quotes")
            }
            let name = try string()
            // Refused whether the bytes repeat or only the characters do: either way a lookup would see one.
            guard seen.insert(Array(name.utf8)).inserted, index[name] == nil else {
                throw error(.duplicateMember, "the member \"\(name)\" is given twice")
            }
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else {
                throw error(orEnd: .unexpectedCharacter, "expected ':' after \"\(name)\"")
            }
            offset += 1
            skipWhitespace()
            index[name] = members.count
            members.append((name, try value()))
            skipWhitespace()
            guard offset < bytes.count else { throw error(.unexpectedEnd, "the text ends inside an object") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            guard bytes[offset] == UInt8(ascii: "}") else {
                throw error(.unexpectedCharacter, "expected ',' or '}' in an object, found \(describe(bytes[offset]))")
            }
            offset += 1
            depth -= 1
            return JSONObject(members: members, index: index)
        }
    }

    private mutating func array() throws(JSONParseError) -> [JSONValue] {
        try nest()
        offset += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            depth -= 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            guard offset < bytes.count else { throw error(.unexpectedEnd, "the text ends inside an array") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            guard bytes[offset] == UInt8(ascii: "]") else {
                throw error(.unexpectedCharacter, "expected ',' or ']' in an array, found \(describe(bytes[offset]))")
            }
            offset += 1
            depth -= 1
            return elements
        }
    }

    private mutating func string() throws(JSONParseError) -> String {
        offset += 1
        var runStart = offset
        var text = ""
        func flushRun(_ end: Int) {
            text += String(decoding: bytes[runStart..<end], as: UTF8.self)
        }
        while true {
            guard offset < bytes.count else { throw error(.unexpectedEnd, "the text ends inside a string") }
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                flushRun(offset)
                offset += 1
                return text
            case UInt8(ascii: "\\"):
                flushRun(offset)
                offset += 1
                guard offset < bytes.count else { throw error(.unexpectedEnd, "the text ends inside an escape") }
                let escaped = bytes[offset]
                offset += 1
                switch escaped {
                case UInt8(ascii: "\""): text += "\""
                case UInt8(ascii: "\\"): text += "\\"
                case UInt8(ascii: "/"): text += "/"
                case UInt8(ascii: "b"): text += "\u{08}"
                case UInt8(ascii: "f"): text += "\u{0C}"
                case UInt8(ascii: "n"): text += "\n"
                case UInt8(ascii: "r"): text += "\r"
                case UInt8(ascii: "t"): text += "\t"
                case UInt8(ascii: "u"):
                    let unit = try hex4()
                    if (0xD800..<0xDC00).contains(unit) {
                        guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                            throw error(.invalidString, "a high surrogate \\u\(String(unit, radix: 16)) without its low half")
                        }
                        offset += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else {
                            throw error(.invalidString, "a high surrogate followed by \\u\(String(low, radix: 16))")
                        }
                        text.unicodeScalars.append(Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!)
                    } else if let scalar = Unicode.Scalar(unit) {
                        text.unicodeScalars.append(scalar)
                    } else {
                        throw error(.invalidString, "a lone low surrogate \\u\(String(unit, radix: 16))")
                    }
                default:
                    offset -= 1
                    throw error(.invalidString, "\\\(describe(escaped)) is not an escape")
                }
                runStart = offset
            case 0x00..<0x20:
                throw error(.invalidString, "a control character (0x\(String(byte, radix: 16))) inside a string")
            default:
                offset += 1
            }
        }
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw error(.unexpectedEnd, "the text ends inside a \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A")) + 10
            default: throw error(.invalidString, "\(describe(byte)) is not a hex digit of a \\u escape")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func number() throws(JSONParseError) -> Double {
        let start = offset
        func digits() -> Int {
            let first = offset
            while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1 }
            return offset - first
        }
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard offset < bytes.count else { throw error(.invalidNumber, "a number without digits") }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
        } else {
            guard digits() > 0 else { throw error(.invalidNumber, "a number without digits") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { throw error(.invalidNumber, "a number with no digit after its '.'") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw error(.invalidNumber, "a number with no digit in its exponent") }
        }
        guard let value = Double(String(decoding: bytes[start..<offset], as: UTF8.self)), value.isFinite else {
            throw JSONParseError(.invalidNumber, offset: start, reason: "a number too large to hold")
        }
        return value
    }
}
