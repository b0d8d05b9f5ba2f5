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
