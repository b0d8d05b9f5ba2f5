/// An answer of the native API that does not have the shape docs/WIRE-FORMATS.md §1 gives it: not JSON, a member
/// missing or of the wrong kind, an address that does not parse, a TTL out of range. A client treats it as a
/// failure of the service that sent it, never as an answer.
public struct NativeFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { "malformed native API answer: \(reason)" }
}

extension JSONValue {
    /// `bytes` parsed as a JSON object.
    static func parseObject(_ bytes: some Collection<UInt8>, what: String) throws(NativeFormatError) -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw NativeFormatError(reason: "\(what) is not JSON: \(error)")
        }
        guard case .object(let object) = value else { throw NativeFormatError(reason: "\(what) is \(value.kind), not an object") }
        return object
    }
}

extension JSONObject {
    func string(_ name: String, in what: String) throws(NativeFormatError) -> String {
        switch self[name] {
        case .string(let text): return text
        case nil: throw NativeFormatError(reason: "\(what) has no \"\(name)\"")
        case let other?: throw NativeFormatError(reason: "\"\(name)\" of \(what) is \(other.kind), not a string")
        }
    }

    /// A whole number of seconds that fits in 32 bits.
    func seconds(_ name: String, in what: String) throws(NativeFormatError) -> UInt32 {
        switch self[name] {
        case .number(let number) where number >= 0 && number <= Double(UInt32.max) && number == number.rounded():
            return UInt32(number)
        case nil: throw NativeFormatError(reason: "\(what) has no \"\(name)\"")
        case let other?: throw NativeFormatError(reason: "\"\(name)\" of \(what) must be a whole number of seconds, not \(other.kind)")
        }
    }

    func optionalBool(_ name: String, in what: String) throws(NativeFormatError) -> Bool? {
        switch self[name] {
        case .bool(let flag): return flag
        case nil: return nil
        case let other?: throw NativeFormatError(reason: "\"\(name)\" of \(what) is \(other.kind), not a boolean")
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
            throw NativeFormatError(reason: "\"\(name)\" of \(what) is \(value.kind), not an array")
        }
        var addresses: [Address] = []
        addresses.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let text) = element, let address = parse(text) else {
                throw NativeFormatError(reason: "\"\(name)\" of \(what) holds \(element), which is not an address of its family")
            }
            addresses.append(address)
        }
        return addresses
    }
}
