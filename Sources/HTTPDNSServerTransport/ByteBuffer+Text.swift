import NIOCore

extension ByteBuffer {
    /// The number of decimal digits of a non-negative `value`.
    @inlinable
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
    @inlinable
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
}
