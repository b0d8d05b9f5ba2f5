/// An answer of the native API that does not have the shape docs/WIRE-FORMATS.md §1 gives it: not JSON, a member
/// missing or of the wrong kind, an address that does not parse, a TTL out of range. A client treats it as a
/// failure of the service that sent it, never as an answer.
///
/// Compare errors by ``code``; the ``reason`` is for people and may change.
public struct NativeFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the kind of fault (usable as a metric dimension). A struct, not an enum,
    /// so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case notJSON = "not_json"
            case missingMember = "missing_member"
            case wrongType = "wrong_type"
            case invalidValue = "invalid_value"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The body is not JSON. The parser's `JSONParseError` is the ``NativeFormatError/cause``.
        public static let notJSON = Code(.notJSON)
        /// A member the format requires is missing (`host`, `ttl`, `dns`, a record's `ips` or `type`).
        public static let missingMember = Code(.missingMember)
        /// A value, or the body itself, is of the wrong JSON kind: a string where an object should be, say.
        public static let wrongType = Code(.wrongType)
        /// A value of the right kind that the format does not allow: an address that does not parse or is of the
        /// other family, a TTL that is not whole seconds in 32 bits, a record type other than 1 or 28. What
        /// ``NativeFormatError/init(reason:)`` gives.
        public static let invalidValue = Code(.invalidValue)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`missing_member`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What kind of fault this is.
    public let code: Code
    /// What was wrong and where: the member, the record.
    public let reason: String
    /// The error underneath, when there is one: the JSON parser's, for a body that is not JSON. Not compared or
    /// hashed: two errors are the same when their code and reason are.
    public let cause: (any Error)?

    /// An error of code ``Code/invalidValue``, with no cause.
    /// - Parameter reason: what was wrong and where.
    public init(reason: String) {
        self.init(.invalidValue, reason: reason)
    }

    /// - Parameters:
    ///   - code: what kind of fault this is.
    ///   - reason: what was wrong and where.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "malformed native API answer: \(reason)" }

    public static func == (lhs: NativeFormatError, rhs: NativeFormatError) -> Bool {
        lhs.code == rhs.code && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
    }
}

extension JSONValue {
    /// `bytes` parsed as a JSON object.
    static func parseObject(_ bytes: some Collection<UInt8>, what: String) throws(NativeFormatError) -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw NativeFormatError(.notJSON, reason: "\(what) is not JSON: \(error)", cause: error)
        }
        guard case .object(let object) = value else { throw NativeFormatError(.wrongType, reason: "\(what) is \(value.kind), not an object") }
        return object
    }
}

extension JSONObject {
    func string(_ name: String, in what: String) throws(NativeFormatError) -> String {
        switch self[name] {
        case .string(let text): return text
        case nil: throw NativeFormatError(.missingMember, reason: "\(what) has no \"\(name)\"")
        case let other?: throw NativeFormatError(.wrongType, reason: "\"\(name)\" of \(what) is \(other.kind), not a string")
        }
    }

    /// A whole number of seconds that fits in 32 bits.
    func seconds(_ name: String, in what: String) throws(NativeFormatError) -> UInt32 {
        switch self[name] {
        case .number(let number) where number >= 0 && number <= Double(UInt32.max) && number == number.rounded():
            return UInt32(number)
        case nil: throw NativeFormatError(.missingMember, reason: "\(what) has no \"\(name)\"")
        case let other?:
            // A number out of range or with a fraction is the right kind with a value the format does not allow.
            let code: NativeFormatError.Code = if case .number = other { .invalidValue } else { .wrongType }
            throw NativeFormatError(code, reason: "\"\(name)\" of \(what) must be a whole number of seconds, not \(other.kind)")
        }
    }

    func optionalBool(_ name: String, in what: String) throws(NativeFormatError) -> Bool? {
        switch self[name] {
        case .bool(let flag): return flag
        case nil: return nil
        case let other?: throw NativeFormatError(.wrongType, reason: "\"\(name)\" of \(what) is \(other.kind), not a boolean")
        }
    }

    /// An optional array of addresses, each parsed by `parse`.
    func addresses<Address>(
        _ name: String,
        in what: String,
        _ parse: (String) -> Address?
    ) throws(NativeFormatError) -> [Address]? {
        guard let value = self[name] else { return nil }
        guard case .array(let elements) = value else {
            throw NativeFormatError(.wrongType, reason: "\"\(name)\" of \(what) is \(value.kind), not an array")
        }
        var addresses: [Address] = []
        addresses.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let text) = element, let address = parse(text) else {
                let code: NativeFormatError.Code = if case .string = element { .invalidValue } else { .wrongType }
                throw NativeFormatError(code, reason: "\"\(name)\" of \(what) holds \(element), which is not an address of its family")
            }
            addresses.append(address)
        }
        return addresses
    }
}
