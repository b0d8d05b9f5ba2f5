/// A JSON value small enough to write by hand, keeping keys in the order given: what the command line and the
/// service print, without Foundation's encoder.
package enum JSON: Sendable {
    case string(String)
    case number(Double)
    case integer(Int)
    case bool(Bool)
    case array([JSON])
    case object([(String, JSON)])
    case null

    /// The value as compact JSON text.
    package var text: String {
        var text = ""
        text.reserveCapacity(128)
        write(to: &text)
        return text
    }

    /// Appends the value as compact JSON text to `text`.
    package func write(to text: inout String) {
        switch self {
        case .string(let value): Self.writeQuoted(value, to: &text)
        case .number(let value): text += value.isFinite ? String(value) : "null"
        case .integer(let value): text += String(value)
        case .bool(let value): text += value ? "true" : "false"
        case .null: text += "null"
        case .array(let values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.write(to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, (name, value)) in members.enumerated() {
                if index > 0 { text += "," }
                Self.writeQuoted(name, to: &text)
                text += ":"
                value.write(to: &text)
            }
            text += "}"
        }
    }

    /// `string` as a JSON string literal, quotes included.
    package static func quote(_ string: String) -> String {
        var text = ""
        writeQuoted(string, to: &text)
        return text
    }

    private static func writeQuoted(_ string: String, to text: inout String) {
        text += "\""
        // Host names, addresses and codes, the usual strings here, need no escaping: append them whole.
        if string.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            text += string
        } else {
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
