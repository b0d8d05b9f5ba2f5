import HTTPDNSInterceptor
import Testing

/// The Cache-Control parser: RFC 9111 §5.2's grammar, names in any case, quoted strings, empty list elements, and a
/// typed error saying where for anything else.
@Suite struct CacheControlTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let lines: [String]
        let directives: [String]
        var testDescription: String { lines.joined(separator: " | ") }
    }

    static let valid: [Case] = [
        Case(lines: ["no-store"], directives: ["no-store"]),
        Case(lines: ["No-Store"], directives: ["no-store"]),
        Case(lines: ["max-age=60, public"], directives: ["max-age=60", "public"]),
        Case(lines: ["max-age = 60 ,\tPUBLIC"], directives: ["max-age=60", "public"]),
        Case(lines: ["private=\"Set-Cookie, X-Secret\", no-cache"], directives: ["private=Set-Cookie, X-Secret", "no-cache"]),
        Case(lines: ["community=\"U\\\"CI\""], directives: ["community=U\"CI"]),
        Case(lines: [",, no-cache ,,"], directives: ["no-cache"]),
        Case(lines: [""], directives: []),
        Case(lines: ["max-age=10", "no-transform"], directives: ["max-age=10", "no-transform"]),
        Case(lines: ["x-ext=tok~en!#$%&'*+.^_`|"], directives: ["x-ext=tok~en!#$%&'*+.^_`|"]),
    ]

    @Test(arguments: valid)
    func readsDirectives(_ test: Case) throws {
        let field = try CacheControl(parsing: test.lines)
        #expect(field.directives.map { $0.name + ($0.argument.map { "=" + $0 } ?? "") } == test.directives)
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let line: String
        let offset: Int
        let reason: String
        var testDescription: String { line }
    }

    static let invalid: [Bad] = [
        Bad(line: "max-age=", offset: 8, reason: "expected a value after '='"),
        Bad(line: "no-store no-cache", offset: 9, reason: "expected ',' between directives"),
        Bad(line: "=60", offset: 0, reason: "expected a directive name"),
        Bad(line: "private=\"unterminated", offset: 21, reason: "a quoted string that does not end"),
        Bad(line: "private=\"a\u{1}b\"", offset: 10, reason: "a control character in a quoted string"),
        Bad(line: "max-age=6 0", offset: 10, reason: "expected ',' between directives"),
        Bad(line: "nö-store", offset: 1, reason: "expected ',' between directives"),
        Bad(line: "private=\"x\"y", offset: 11, reason: "expected ',' between directives"),
        Bad(line: "private=\"a\\", offset: 11, reason: "a quoted string that does not end"),
        Bad(line: "private=\"a\\\u{1}\"", offset: 11, reason: "a control character in a quoted string"),
    ]

    @Test(arguments: invalid)
    func refusesAnythingElseSayingWhere(_ test: Bad) {
        let error = #expect(throws: CacheControlError.self) { try CacheControl(parsing: test.line) }
        #expect(error?.offset == test.offset, "\(String(describing: error))")
        #expect(error?.reason == test.reason, "\(String(describing: error))")
    }

    @Test func lookupsIgnoreCaseAndReadDeltaSeconds() throws {
        let field = try CacheControl(parsing: "Max-Age=120, S-MAXAGE=99999999999, stale=abc, private")
        #expect(field.contains("PRIVATE") && field.contains("max-age") && !field.contains("public"))
        #expect(field.deltaSeconds("max-age") == 120)
        #expect(field.deltaSeconds("s-maxage") == 1 << 31, "larger than 2^31 is taken as 2^31")
        #expect(field.deltaSeconds("stale") == nil && field.deltaSeconds("private") == nil && field.deltaSeconds("public") == nil)
        let edges = try CacheControl(parsing: "a=2147483648, b=2147483647, c=000000000060, d=9999999999, e=0")
        #expect(edges.deltaSeconds("a") == 1 << 31 && edges.deltaSeconds("b") == 2_147_483_647)
        #expect(edges.deltaSeconds("c") == 60, "leading zeros")
        #expect(edges.deltaSeconds("d") == 1 << 31 && edges.deltaSeconds("e") == 0)
    }
}
