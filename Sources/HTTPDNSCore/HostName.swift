/// A validated DNS host name, normalised to lower case without a trailing dot.
///
/// Validation follows the LDH rules of RFC 1123 §2.1: at most 253 bytes, labels of 1–63 letters, digits and
/// hyphens that neither start nor end with a hyphen. One trailing dot is accepted and removed. A name whose last
/// label is all digits is rejected because it is an IP address (or a typo of one), not a name to resolve.
public struct HostName: Sendable, Hashable, CustomStringConvertible {
    /// The normalised name: lower case, no trailing dot.
    public let value: String

    /// The name's hash, computed once: a name is validated once and then looked up in caches many times.
    private let precomputedHash: Int

    public static func == (lhs: HostName, rhs: HostName) -> Bool {
        lhs.precomputedHash == rhs.precomputedHash && lhs.value == rhs.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(precomputedHash)
    }

    /// Validates and normalises `string`.
    /// - Throws: ``HostNameError`` saying what is wrong with the name.
    public init(_ string: String) throws(HostNameError) {
        // Checked in place over the string's own UTF-8; a copy is made only when the name must change (capitals, a
        // trailing dot), and most names need none.
        var text = string
        let checked = text.withUTF8 { bytes in
            Result { () throws(HostNameError) -> (length: Int, hasCapitals: Bool) in try Self.check(bytes, name: string) }
        }
        let (length, hasCapitals) = try checked.get()
        if hasCapitals {
            self.value = String(decoding: string.utf8.prefix(length).lazy.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        } else if length < string.utf8.count {
            self.value = String(decoding: string.utf8.prefix(length), as: UTF8.self)
        } else {
            self.value = string
        }
        self.precomputedHash = value.hashValue
    }

    /// Checks a name's bytes.
    /// - Returns: its length without a trailing dot, and whether it holds capitals.
    private static func check(_ bytes: UnsafeBufferPointer<UInt8>, name string: String) throws(HostNameError) -> (length: Int, hasCapitals: Bool) {
        let utf8 = bytes.last == UInt8(ascii: ".") ? bytes[..<(bytes.count - 1)] : bytes[...]
        guard !utf8.isEmpty else {
            throw HostNameError(.empty, name: string, reason: string.isEmpty ? "the name is empty" : "the name is only a dot")
        }
        guard utf8.count <= 253 else {
            throw HostNameError(.tooLong, name: string, reason: "the name is \(utf8.count) bytes long; at most 253 are allowed")
        }
        var hasCapitals = false
        var labelStart = 0
        var labelNumber = 1
        var lastLabelAllDigits = true
        for index in 0...utf8.count {
            let atEnd = index == utf8.count
            let byte = atEnd ? UInt8(ascii: ".") : utf8[index]
            if byte == UInt8(ascii: ".") {
                let length = index - labelStart
                guard length > 0 else {
                    throw HostNameError(.emptyLabel, name: string, reason: "label \(labelNumber) is empty")
                }
                guard length <= 63 else {
                    throw HostNameError(.labelTooLong, name: string, reason: "label \(labelNumber) is \(length) bytes long; at most 63 are allowed")
                }
                if utf8[labelStart] == UInt8(ascii: "-") || utf8[index - 1] == UInt8(ascii: "-") {
                    throw HostNameError(.invalidHyphen, name: string, reason: "label \(labelNumber) starts or ends with a hyphen")
                }
                lastLabelAllDigits = utf8[labelStart..<index].allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                labelStart = index + 1
                labelNumber += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                break
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                hasCapitals = true
            default:
                let shown = byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
                throw HostNameError(
                    .invalidCharacter,
                    name: string,
                    reason: "\(shown) is not allowed; names use letters, digits and hyphens (IDNs must be given in their xn-- form)"
                )
            }
        }
        guard !lastLabelAllDigits else {
            throw HostNameError(.ipAddress, name: string, reason: "the last label is all digits: this looks like an IP address, not a name")
        }
        return (utf8.count, hasCapitals)
    }

    /// The name as a fully qualified domain name, with a trailing dot.
    public var fullyQualified: String { value + "." }

    public var description: String { value }
}

/// A host name that failed validation, and why.
///
/// Compare errors by ``code``; the ``reason`` is for people and may change.
public struct HostNameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the rule the name broke (usable as a metric dimension). A struct, not an
    /// enum, so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case empty
            case tooLong = "too_long"
            case emptyLabel = "empty_label"
            case labelTooLong = "label_too_long"
            case invalidHyphen = "invalid_hyphen"
            case invalidCharacter = "invalid_character"
            case ipAddress = "ip_address"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The name is empty, or only a dot.
        public static let empty = Code(.empty)
        /// The name is longer than 253 bytes (without a trailing dot).
        public static let tooLong = Code(.tooLong)
        /// A label is empty: two dots in a row, or a dot first.
        public static let emptyLabel = Code(.emptyLabel)
        /// A label is longer than 63 bytes.
        public static let labelTooLong = Code(.labelTooLong)
        /// A label starts or ends with a hyphen.
        public static let invalidHyphen = Code(.invalidHyphen)
        /// A byte other than a letter, a digit, a hyphen or a dot: a space, an underscore, a character outside ASCII
        /// (an internationalised name must be given in its `xn--` form).
        public static let invalidCharacter = Code(.invalidCharacter)
        /// The last label is all digits: an IP address (or a typo of one), not a name to resolve.
        public static let ipAddress = Code(.ipAddress)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`too_long`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// Which rule the name broke.
    public let code: Code
    /// The name as it was given.
    public let name: String
    /// What is wrong with it, in a sentence fragment.
    public let reason: String
    /// The error underneath, when there is one (validation itself has none). Not compared or hashed: two errors are
    /// the same when their code, name and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: which rule the name broke.
    ///   - name: the name as it was given.
    ///   - reason: what is wrong with it, in a sentence fragment.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, name: String, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.name = name
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "invalid host name '\(name)': \(reason)" }

    public static func == (lhs: HostNameError, rhs: HostNameError) -> Bool {
        lhs.code == rhs.code && lhs.name == rhs.name && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(name)
        hasher.combine(reason)
    }
}
