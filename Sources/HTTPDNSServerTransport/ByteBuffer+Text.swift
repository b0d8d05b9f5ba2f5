import HTTPDNSCore
import NIOCore

extension ByteBuffer {
    /// The number of decimal digits of a non-negative `value`.
    public static func decimalDigits(_ value: Int) -> Int {
        var count = 1
        var rest = value / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        return count
    }

    /// Appends a non-negative number in decimal, without making a `String`.
    public mutating func writeDecimal(_ value: Int) {
        let count = Self.decimalDigits(value)
        writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
            var rest = value
            for offset in (0..<count).reversed() {
                bytes[offset] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return count
        }
    }

    /// Appends an IPv4 address in dotted-quad notation, as `IPv4Address.description` writes it.
    public mutating func writeIPv4(_ address: IPv4Address) {
        for shift in stride(from: 24, through: 0, by: -8) {
            if shift < 24 { writeInteger(UInt8(ascii: ".")) }
            writeDecimal(Int((address.value >> UInt32(shift)) & 0xFF))
        }
    }
}
