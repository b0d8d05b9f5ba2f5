import HTTPDNSCore
import HTTPDNSInterceptor
import Testing

/// HTTPDNSInterceptor's parse errors follow docs/API-CONVENTIONS.md as `InterceptorError` does: a struct code callers
/// branch on, a message for people, and the error underneath as a `cause` that equality ignores.
@Suite struct InterceptorErrorCodeTests {
    // MARK: CanonicalRequestError

    @Test(arguments: [
        ("a.example/x", CanonicalRequestError.Code.notAbsolute, CanonicalRequest.Configuration.Mode.standard),
        ("http://a example/", .invalidCharacter, .standard),
        ("http://a.example/\u{7}", .invalidCharacter, .standard),
        ("http://a.example/é", .invalidCharacter, .standard),
        ("http://a.example/%zz", .invalidPercentEncoding, .standard),
        ("http://us%zzer@a.example/", .invalidPercentEncoding, .standard),
        ("http:///x", .invalidHost, .standard),
        ("http://a..example/", .invalidHost, .standard),
        ("http://\(String(repeating: "a", count: 64)).example/", .invalidHost, .standard),
        ("http://a.ex*ample/", .invalidHost, .standard),
        ("http://[2001:db8::1/", .invalidHost, .standard),
        ("http://[2001:db8::g]/", .invalidHost, .standard),
        ("http://a.example:99999/", .invalidPort, .standard),
        ("http://a.example:8o/", .invalidPort, .standard),
        ("http://a.example:0/", .invalidPort, .standard),
        ("http://a.example:/x", .invalidPort, .apple),
        ("http://a.example:080/", .invalidPort, .apple),
    ])
    func aURLThatCannotBeSentSaysWhichPart(url: String, code: CanonicalRequestError.Code, mode: CanonicalRequest.Configuration.Mode) {
        let error = #expect(throws: CanonicalRequestError.self) {
            try CanonicalRequest.normalize(method: "GET", url: url, configuration: .init(mode: mode))
        }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.url == url)
    }

    @Test func aCanonicalRequestErrorKeepsItsCauseOutOfEquality() {
        let withCause = CanonicalRequestError(.invalidHost, url: "http://x/", reason: "y", cause: CancellationError())
        let without = CanonicalRequestError(.invalidHost, url: "http://x/", reason: "y")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
        #expect(withCause != CanonicalRequestError(.invalidPort, url: "http://x/", reason: "y"))
        #expect(without.description == "cannot send 'http://x/': y")
    }

    // MARK: CacheControlError

    @Test(arguments: [
        ("=60", CacheControlError.Code.missingName),
        ("max-age=", .missingValue),
        ("no-store no-cache", .missingSeparator),
        ("nö-store", .missingSeparator),
        ("private=\"unterminated", .unterminatedString),
        ("private=\"a\\", .unterminatedString),
        ("private=\"a\u{1}b\"", .controlCharacter),
        ("private=\"a\\\u{1}\"", .controlCharacter),
    ])
    func aCacheControlFieldOutsideTheGrammarSaysWhatWasExpected(line: String, code: CacheControlError.Code) {
        let error = #expect(throws: CacheControlError.self) { try CacheControl(parsing: line) }
        #expect(error?.code == code, "\(String(describing: error))")
    }

    @Test func aCacheControlErrorKeepsItsCauseOutOfEquality() {
        let withCause = CacheControlError(.missingValue, offset: 8, reason: "y", cause: CancellationError())
        let without = CacheControlError(.missingValue, offset: 8, reason: "y")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
    }

    // MARK: Codes

    @Test func everyCodeIsListedOnceWithItsOwnWord() {
        expectStableCodes(CanonicalRequestError.Code.all, count: 5)
        expectStableCodes(CacheControlError.Code.all, count: 5)
        expectStableCodes(InterceptorError.Code.all, count: 11)
        #expect(CanonicalRequestError.Code.invalidHost.description == "invalid_host")
        #expect(CacheControlError.Code.missingSeparator.description == "missing_separator")
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
