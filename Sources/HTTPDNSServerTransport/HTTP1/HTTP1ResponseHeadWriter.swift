import HTTPTypes
import NIOCore

/// Writes an HTTP/1.1 response head (RFC 9112 §4, §5): the status line, the fields, the framing and `Date`. The
/// front's answers and the router's responses both go through here, so they are written the same way.
enum HTTP1ResponseHeadWriter {
    /// - Parameter chunked: whether to announce a chunked body (`transfer-encoding: chunked`).
    static func write(_ head: ResponseHead, chunked: Bool, date: String, into buffer: inout ByteBuffer) {
        if head.status == .ok {
            buffer.writeStaticString("HTTP/1.1 200 OK\r\n")
        } else {
            buffer.writeString("HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n")
        }
        if let contentType = head.contentType {
            buffer.writeStaticString("Content-Type: ")
            buffer.writeString(contentType)
            buffer.writeStaticString("\r\n")
        }
        switch head.cacheControl {
        case .maxAge(let seconds)?:
            buffer.writeStaticString("Cache-Control: max-age=")
            buffer.writeDecimal(Int(seconds))
            buffer.writeStaticString("\r\n")
        case .noStore?:
            buffer.writeStaticString("Cache-Control: no-store\r\n")
        case nil:
            break
        }
        head.fields.forEach(canonical: false) { name, value in
            guard ResponseHead.isWritten(name) else { return }
            buffer.writeString(name)
            buffer.writeStaticString(": ")
            buffer.writeString(value)
            buffer.writeStaticString("\r\n")
        }
        if let length = head.contentLength {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeDecimal(length)
            buffer.writeStaticString("\r\n")
        }
        if chunked { buffer.writeStaticString("Transfer-Encoding: chunked\r\n") }
        buffer.writeStaticString("Date: ")
        buffer.writeString(date)
        buffer.writeStaticString("\r\n\r\n")
    }
}
