import HTTPDNSCore
import HTTPDNSServerTransport
import HTTPDNSWire
import NIOCore

/// The service writes `/d` answers straight into the response body.
extension ByteBuffer: JSONOutput {
    public mutating func appendJSON(_ text: StaticString) { writeStaticString(text) }

    public mutating func appendJSON(text: String) { writeString(text) }

    public mutating func appendJSON(decimal value: Int) { writeDecimal(value) }

    public mutating func appendJSON(ipv4 address: IPv4Address) { writeIPv4(address) }
}

extension ByteBuffer {
    /// Appends an IPv4 address in dotted-quad notation, as `IPv4Address.description` writes it.
    mutating func writeIPv4(_ address: IPv4Address) {
        for shift in stride(from: 24, through: 0, by: -8) {
            if shift < 24 { writeInteger(UInt8(ascii: ".")) }
            writeDecimal(Int((address.value >> UInt32(shift)) & 0xFF))
        }
    }
}
