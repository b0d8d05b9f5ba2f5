import HTTPDNSWire
import Testing

/// The strict JSON reader behind the native API's answers.
@Suite struct JSONValueTests {
    @Test func parsesEveryKindOfValue() throws {
        let text = #" {"s":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00","n":-12.5e1,"z":0,"t":true,"f":false,"x":null,"a":[1,[]],"o":{}} "#
        guard case .object(let object) = try JSONValue(parsing: Array(text.utf8)) else {
            Issue.record("not an object")
            return
        }
        #expect(object.names == ["s", "n", "z", "t", "f", "x", "a", "o"])
        #expect(object["s"] == .string("a\"\\/\u{08}\u{0C}\n\r\té😀"))
        #expect(object["n"] == .number(-125))
        #expect(object["t"] == .bool(true) && object["f"] == .bool(false) && object["x"] == .null)
        #expect(object["a"] == .array([.number(1), .array([])]))
        #expect(object["missing"] == nil)
    }

    @Test(arguments: [
        ("", "ends where a value"),
        ("{\"a\":1,}", "member name"),
        ("{\"a\":1,\"a\":2}", "given twice"),
        ("[1,]", "where a value"),
        ("01", "after the value"),
        ("1.", "after its '.'"),
        ("1e", "exponent"),
        ("-", "without digits"),
        ("\"\\x\"", "not an escape"),
        ("\"\\ud800\"", "without its low half"),
        ("\"\\udc00\"", "lone low surrogate"),
        ("\"a\u{01}\"", "control character"),
        ("tru", "expected true"),
        ("1e999", "too large"),
        ("{\"a\" 1}", "expected ':'"),
        ("[1 2]", "expected ',' or ']'"),
        ("\"abc", "ends inside a string"),
    ])
    func rejectsWhatRFC8259Rejects(text: String, reason: String) {
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: Array(text.utf8)) }
        #expect(error?.reason.contains(reason) == true, "\(text): \(error?.reason ?? "no error")")
    }

    @Test func refusesTextThatIsNotUTF8() {
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: [UInt8(ascii: "\""), 0xC3, 0x28, UInt8(ascii: "\"")]) }
        #expect(error?.reason.contains("not valid UTF-8") == true)
    }

    /// "é" written as one scalar and as e + combining accent: different bytes, one name to a lookup. Refused, as
    /// a name given twice is, rather than one of them kept silently.
    @Test func twoSpellingsOfOneNameAreANameGivenTwice() {
        let text = "{\"\u{E9}\": 1, \"e\u{301}\": 2}"
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: Array(text.utf8)) }
        #expect(error?.reason.contains("given twice") == true)
        #expect((try? JSONValue(parsing: Array(#"{"a": 1, "b": 2}"#.utf8))) != nil)
    }

    @Test func boundsNesting() {
        let deep = String(repeating: "[", count: JSONValue.maxDepth + 1) + String(repeating: "]", count: JSONValue.maxDepth + 1)
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: Array(deep.utf8)) }
        #expect(error?.reason.contains("nested deeper") == true)
        let fits = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
        #expect((try? JSONValue(parsing: Array(fits.utf8))) != nil)
    }

    @Test func randomBytesNeverCrashTheParser() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,.-+eE0123456789tfnrule\ "#.utf8) + [0x00, 0xFF, 0xC3]
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0..<48, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            _ = try? JSONValue(parsing: bytes)
        }
    }
}
