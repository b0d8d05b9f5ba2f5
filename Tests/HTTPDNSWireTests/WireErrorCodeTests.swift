import Foundation
import HTTPDNSCore
import HTTPDNSWire
import Testing

/// HTTPDNSWire's public errors follow docs/API-CONVENTIONS.md: a struct code callers branch on, a message for people,
/// and the error underneath as a `cause` that equality ignores.
@Suite struct WireErrorCodeTests {
    // MARK: DNSMessageError

    /// A query for `a` A: the 12-byte header, then the question.
    static let query: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, UInt8(ascii: "a"), 0, 0, 1, 0, 1]

    @Test(arguments: [
        (Array(query.prefix(5)), DNSMessageError.Code.truncated),
        (Array(query.prefix(14)), .truncated),
        (Array(query.prefix(17)), .truncated),
        (query + [0], .trailingBytes),
        ([UInt8](repeating: 0, count: 65_536), .tooLarge),
        // The question's name is a pointer to itself.
        (Array(query.prefix(12)) + [0xC0, 12, 0, 1, 0, 1], .invalidCompression),
        // A label type of 0b01, which RFC 6891 retired.
        (Array(query.prefix(12)) + [0x41, 0, 0, 1, 0, 1], .invalidName),
    ])
    func aBadQuerySaysWhatKindOfFaultItHas(bytes: [UInt8], code: DNSMessageError.Code) {
        let error = #expect(throws: DNSMessageError.self) { try DNSMessage(parsingQuery: bytes) }
        #expect(error?.code == code, "\(String(describing: error))")
        let full = #expect(throws: DNSMessageError.self) { try DNSMessage(parsing: bytes) }
        #expect(full?.code == code, "\(String(describing: full))")
    }

    @Test func recordDataThatDoesNotHoldItsFieldsIsInvalidRecordData() {
        // An MX answer whose data is one byte: not even its preference fits.
        let response: [UInt8] =
            [0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 1, UInt8(ascii: "a"), 0, 0, 15, 0, 1]
            + [0xC0, 12, 0, 15, 0, 1, 0, 0, 0, 60, 0, 1, 0]
        let error = #expect(throws: DNSMessageError.self) { try DNSMessage(parsing: response) }
        #expect(error?.code == .invalidRecordData, "\(String(describing: error))")
        // Cut inside the record instead: the message itself is short.
        let cut = #expect(throws: DNSMessageError.self) { try DNSMessage(parsing: response.dropLast(3)) }
        #expect(cut?.code == .truncated, "\(String(describing: cut))")
    }

    @Test func encodingMoreThanAMessageHoldsIsTooLarge() {
        var message = DNSMessage(id: 1, isResponse: true, questions: [.init(name: "a.example", type: .txt)])
        message.answers = [.init(name: "a.example", type: .txt, ttlSeconds: 1, data: [UInt8](repeating: 1, count: 65_536))]
        let error = #expect(throws: DNSMessageError.self) { try message.encoded() }
        #expect(error?.code == .tooLarge)
    }

    @Test func theOldDNSMessageInitialiserIsMalformedAndTheCauseIsNotCompared() {
        let old = DNSMessageError(reason: "x")
        #expect(old.code == .malformed && old.cause == nil && old.description == "malformed DNS message: x")
        let withCause = DNSMessageError(.truncated, reason: "x", cause: CancellationError())
        #expect(withCause.cause is CancellationError)
        #expect(withCause == DNSMessageError(.truncated, reason: "x"))
        #expect(withCause.hashValue == DNSMessageError(.truncated, reason: "x").hashValue)
        #expect(withCause != old)
    }

    // MARK: JSONParseError

    @Test(arguments: [
        ("", JSONParseError.Code.unexpectedEnd),
        ("{", .unexpectedEnd),
        ("[1,", .unexpectedEnd),
        ("\"abc", .unexpectedEnd),
        ("[1 2]", .unexpectedCharacter),
        ("{} x", .unexpectedCharacter),
        ("nul", .unexpectedEnd),
        ("nulx", .unexpectedCharacter),
        ("{\"a\"", .unexpectedEnd),
        ("{1:2}", .unexpectedCharacter),
        ("\"\\x\"", .invalidString),
        ("\"\\ud800\"", .invalidString),
        ("\"\\u12g4\"", .invalidString),
        ("\"a\u{1}b\"", .invalidString),
        ("-", .invalidNumber),
        ("1.", .invalidNumber),
        ("1e999", .invalidNumber),
        (#"{"a":1,"a":2}"#, .duplicateMember),
        (String(repeating: "[", count: 65) + String(repeating: "]", count: 65), .tooDeep),
    ])
    func malformedJSONSaysWhatKindOfFaultItHas(text: String, code: JSONParseError.Code) {
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: Array(text.utf8)) }
        #expect(error?.code == code, "\(String(describing: error))")
    }

    @Test func textThatIsNotUTF8IsInvalidUTF8() {
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: [UInt8(ascii: "\""), 0xFF, UInt8(ascii: "\"")]) }
        #expect(error?.code == .invalidUTF8 && error?.offset == 0)
    }

    @Test func aJSONParseErrorKeepsItsCauseOutOfEquality() {
        let withCause = JSONParseError(.unexpectedEnd, offset: 3, reason: "x", cause: CancellationError())
        let without = JSONParseError(.unexpectedEnd, offset: 3, reason: "x")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
        #expect(without.redactedDescription == "invalid JSON at byte 3")
    }

    // MARK: NativeFormatError

    @Test(arguments: [
        (#"<html>"#, NativeFormatError.Code.notJSON),
        (#"["a"]"#, .wrongType),
        (#"{"ips":[],"ttl":1,"origin_ttl":1}"#, .missingMember),
        (#"{"host":"a","ips":[],"ttl":1}"#, .missingMember),
        (#"{"host":1,"ips":[],"ttl":1,"origin_ttl":1}"#, .wrongType),
        (#"{"host":"a","ips":"192.0.2.1","ttl":1,"origin_ttl":1}"#, .wrongType),
        (#"{"host":"a","ips":[1],"ttl":1,"origin_ttl":1}"#, .wrongType),
        (#"{"host":"a","ips":["2001:db8::1"],"ttl":1,"origin_ttl":1}"#, .invalidValue),
        (#"{"host":"a","ips":[],"ttl":-1,"origin_ttl":1}"#, .invalidValue),
        (#"{"host":"a","ips":[],"ttl":"60","origin_ttl":1}"#, .wrongType),
        (#"{"host":"a","ips":[],"ttl":1,"origin_ttl":1,"stale":"yes"}"#, .wrongType),
    ])
    func aMalformedNativeAnswerSaysWhatKindOfFaultItHas(text: String, code: NativeFormatError.Code) {
        let error = #expect(throws: NativeFormatError.self) { try NativeAnswer(parsingJSON: Array(text.utf8)) }
        #expect(error?.code == code, "\(String(describing: error))")
    }

    @Test(arguments: [
        (#"{"answers":[]}"#, NativeFormatError.Code.missingMember),
        (#"{"dns":{}}"#, .wrongType),
        (#"{"dns":[1]}"#, .wrongType),
        (#"{"dns":[{"host":"a","ips":[],"ttl":1}]}"#, .missingMember),
        (#"{"dns":[{"host":"a","ips":[],"type":5,"ttl":1}]}"#, .invalidValue),
        (#"{"dns":[{"host":"a","type":1,"ttl":1}]}"#, .missingMember),
        (#"{"dns":[{"host":"a","ips":["2001:db8::1"],"type":1,"ttl":1}]}"#, .invalidValue),
    ])
    func aMalformedBatchAnswerSaysWhatKindOfFaultItHas(text: String, code: NativeFormatError.Code) {
        let error = #expect(throws: NativeFormatError.self) { try NativeBatchAnswer(parsingJSON: Array(text.utf8)) }
        #expect(error?.code == code, "\(String(describing: error))")
    }

    @Test func aNativeAnswerThatIsNotJSONKeepsTheParsersError() {
        let error = #expect(throws: NativeFormatError.self) { try NativeAnswer(parsingJSON: Array("{".utf8)) }
        #expect(error?.code == .notJSON)
        #expect((error?.cause as? JSONParseError)?.code == .unexpectedEnd)
    }

    @Test func theOldNativeFormatInitialiserIsAnInvalidValueAndTheCauseIsNotCompared() {
        let old = NativeFormatError(reason: "x")
        #expect(old.code == .invalidValue && old.cause == nil && old.description == "malformed native API answer: x")
        let withCause = NativeFormatError(.notJSON, reason: "x", cause: CancellationError())
        #expect(withCause == NativeFormatError(.notJSON, reason: "x"))
        #expect(withCause.hashValue == NativeFormatError(.notJSON, reason: "x").hashValue)
    }

    // MARK: WarmStartError

    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-warm-code-\(UUID().uuidString).json").path
    }

    @Test(arguments: [
        ("not json", WarmStartError.Code.notJSON),
        (#"[1]"#, .invalidFormat),
        (#"{"version":2,"entries":[]}"#, .invalidFormat),
        (#"{"version":1,"entries":[{"host":"bad_name"}]}"#, .invalidFormat),
    ])
    func aFileThatIsNotAWarmStartFileSaysHow(text: String, code: WarmStartError.Code) throws {
        let file = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: file) }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let error = #expect(throws: WarmStartError.self) { try WarmStartFile.load(from: file) }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.path == file)
        if code == .notJSON { #expect(error?.cause is JSONParseError) }
    }

    @Test func aFileThatCannotBeReadOrWrittenKeepsTheSystemsError() {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-missing-\(UUID().uuidString)/warm.json").path
        let read = #expect(throws: WarmStartError.self) { try WarmStartFile.load(from: missing) }
        #expect(read?.code == .unreadable && read?.cause != nil, "\(String(describing: read))")
        let write = #expect(throws: WarmStartError.self) { try WarmStartFile.save([], to: missing) }
        #expect(write?.code == .unwritable && write?.cause != nil, "\(String(describing: write))")
        let withCause = WarmStartError(.unwritable, path: "/x", reason: "y", cause: CancellationError())
        #expect(withCause == WarmStartError(.unwritable, path: "/x", reason: "y"))
        #expect(withCause.hashValue == WarmStartError(.unwritable, path: "/x", reason: "y").hashValue)
    }

    // MARK: Codes

    @Test func everyCodeIsListedOnceWithItsOwnWord() {
        expectStableCodes(DNSMessageError.Code.all, count: 7)
        expectStableCodes(JSONParseError.Code.all, count: 7)
        expectStableCodes(NativeFormatError.Code.all, count: 4)
        expectStableCodes(WarmStartError.Code.all, count: 4)
        #expect(DNSMessageError.Code.truncated.description == "truncated")
        #expect(JSONParseError.Code.unexpectedEnd.description == "unexpected_end")
        #expect(NativeFormatError.Code.missingMember.description == "missing_member")
        #expect(WarmStartError.Code.notJSON.description == "not_json")
    }
}

/// `all` holds `count` different codes, each written as its own snake-case word.
private func expectStableCodes<Code: Hashable & CustomStringConvertible>(
    _ all: [Code],
    count: Int,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(all.count == count, sourceLocation: sourceLocation)
    #expect(Set(all).count == count, sourceLocation: sourceLocation)
    #expect(Set(all.map(\.description)).count == count, sourceLocation: sourceLocation)
    for code in all {
        let word = code.description
        let isSnakeCase = word.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }
        #expect(!word.isEmpty && isSnakeCase, "\(word)", sourceLocation: sourceLocation)
    }
}
