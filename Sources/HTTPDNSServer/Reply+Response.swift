import HTTPDNSServerTransport
import Hummingbird

extension Response {
    init(_ reply: Reply) {
        self.init(status: reply.status, headers: reply.headers, body: .init(byteBuffer: reply.body))
    }
}
