import HTTPDNSCore

/// A record's RDATA in presentation form (RFC 1035 §5.1), as JSON DNS writes it in `data`: the common types by their
/// fields, any other as RFC 3597's `\# LENGTH HEX`. Names inside RDATA are the uncompressed ones ``DNSMessage``
/// keeps, written fully qualified.
public enum RecordPresentation {
    public static func text(_ record: DNSMessage.Record) -> String {
        let data = record.data
        var reader = Reader(bytes: data)
        let text: String? =
            switch record.type.rawValue {
            case 1 where data.count == 4: data.map(String.init).joined(separator: ".")
            case 28 where data.count == 16: IPv6Presentation.text(data)
            case 2, 5, 12: reader.name().flatMap { reader.atEnd ? $0 : nil }
            case 15: reader.number(2).flatMap { preference in reader.name().map { "\(preference) \($0)" } }
            case 16: reader.strings()
            case 33:
                reader.number(2).flatMap { priority in
                    reader.number(2).flatMap { weight in reader.number(2).flatMap { port in reader.name().map { "\(priority) \(weight) \(port) \($0)" } } }
                }
            case 6:
                reader.name().flatMap { primary in
                    reader.name().flatMap { mailbox in
                        let numbers = (0..<5).compactMap { _ in reader.number(4) }
                        return numbers.count == 5 && reader.atEnd ? ([primary, mailbox] + numbers.map(String.init)).joined(separator: " ") : nil
                    }
                }
            default: nil
            }
        // RFC 3597 §5: the generic form, for unknown types and anything that did not read as its type.
        return text ?? "\\# \(data.count)" + (data.isEmpty ? "" : " " + data.map { byte in String(byte, radix: 16, uppercase: true).leftPadded(2) }.joined())
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        mutating func number(_ width: Int) -> UInt32? {
            guard offset + width <= bytes.count else { return nil }
            defer { offset += width }
            return bytes[offset..<(offset + width)].reduce(0) { $0 << 8 | UInt32($1) }
        }

        /// An uncompressed name, fully qualified; `.` for the root.
        mutating func name() -> String? {
            var labels: [String] = []
            while offset < bytes.count {
                let length = Int(bytes[offset])
                offset += 1
                if length == 0 { return labels.isEmpty ? "." : labels.joined(separator: ".") + "." }
                guard length < 64, offset + length <= bytes.count else { return nil }
                labels.append(Self.escaped(bytes[offset..<(offset + length)], quoting: false))
                offset += length
            }
            return nil
        }

        /// Character strings, each quoted, separated by spaces.
        mutating func strings() -> String? {
            var strings: [String] = []
            while offset < bytes.count {
                let length = Int(bytes[offset])
                offset += 1
                guard offset + length <= bytes.count else { return nil }
                strings.append("\"" + Self.escaped(bytes[offset..<(offset + length)], quoting: true) + "\"")
                offset += length
            }
            return strings.isEmpty ? nil : strings.joined(separator: " ")
        }

        /// Printable ASCII as it is, `\` before the characters that would end or split the text, `\DDD` for the rest.
        static func escaped(_ bytes: ArraySlice<UInt8>, quoting: Bool) -> String {
            var text = ""
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): text += "\\" + String(UnicodeScalar(byte))
                // Inside quotes (character strings) dots and spaces are plain text, as `dig` prints them; in a name
                // they would split a label, so they are escaped. One `where` per pattern: a `where` binds only to
                // the pattern before it.
                case UInt8(ascii: ".") where !quoting, UInt8(ascii: " ") where !quoting: text += "\\" + String(UnicodeScalar(byte))
                case 0x20...0x7E: text.unicodeScalars.append(UnicodeScalar(byte))
                default: text += "\\" + String(byte).leftPadded(3, with: "0")
                }
            }
            return text
        }
    }
}

/// RFC 5952 text of 16 address bytes.
enum IPv6Presentation {
    static func text(_ bytes: [UInt8]) -> String {
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
        return IPv6Address(high: high, low: low).description
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
