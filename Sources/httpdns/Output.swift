#if canImport(Glibc)
    import Glibc
#endif

/// Where the command line writes: results to stdout, diagnostics to stderr.
enum Output {
    static func diagnostic(_ message: String) {
        var line = message
        if !line.hasSuffix("\n") { line += "\n" }
        // write(2) on fd 2 rather than the C `stderr` global, which Swift 6 treats as shared mutable state.
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }
}

/// A JSON value small enough to write by hand, keeping keys in the order given.
enum JSON {
    case string(String)
    case number(Double)
    case integer(Int)
    case bool(Bool)
    case array([JSON])
    case object([(String, JSON)])
    case null

    var text: String {
        switch self {
        case .string(let value): return Self.quote(value)
        case .number(let value): return value.isFinite ? String(value) : "null"
        case .integer(let value): return String(value)
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        case .array(let values): return "[" + values.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { Self.quote($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
