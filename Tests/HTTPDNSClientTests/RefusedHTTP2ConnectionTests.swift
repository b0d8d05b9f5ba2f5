import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSTesting
import HTTPDNSWire
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import HTTPDNSClient

/// A hostile DoH server over HTTP/2 whose certificate holds its address (`IP:127.0.0.1`) but not the name the client
/// asks for: NIOSSL alone would accept it. As soon as TLS is up, before it has read anything, it sends its SETTINGS and
/// a forged response on stream 1 (HEADERS and DATA) in one write, so that the client decodes the forged response in
/// the same read as the SETTINGS that make the connection usable. The client must refuse the connection: no request
/// on it (the server counts the HEADERS frames it gets: none), the forged answer never taken, the lookup failing with
/// `certificateRejected`. A SwiftNIO server of the test's own (fault injection: no real server sends this).
@Suite("A refused HTTP/2 connection carries nothing", .timeLimit(.minutes(1)))
struct RefusedHTTP2ConnectionTests {
    /// A count shared between the server's connections and the test.
    final class Count: Sendable {
        let value = Mutex(0)
    }

    /// The forged answer's address.
    static let forged = "203.0.113.66"

    /// Sends SETTINGS and a forged response on stream 1 once TLS is up, and counts the HEADERS frames the client sends.
    final class HostileHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let headersReceived: Count
        /// What has been read of the client's bytes on this connection, not yet a whole frame.
        private let scan = Mutex<(bytes: [UInt8], sawPreface: Bool)>(([], false))

        init(headersReceived: Count) { self.headersReceived = headersReceived }

        /// Written before the handshake ends: TLS holds it and sends it as soon as the handshake is done.
        func channelActive(context: ChannelHandlerContext) {
            do {
                var buffer = context.channel.allocator.buffer(capacity: 256)
                // SETTINGS, empty, on stream 0.
                Self.frame(&buffer, type: 0x4, flags: 0, stream: 0, payload: [])
                // HEADERS on stream 1, END_HEADERS: `:status: 200` (HPACK static index 8).
                Self.frame(&buffer, type: 0x1, flags: 0x4, stream: 1, payload: [0x88])
                // DATA on stream 1, END_STREAM: an answer to the client's query for a.dot.test A.
                let answer = try! DNSMessage(
                    id: 0,
                    isResponse: true,
                    recursionAvailable: true,
                    questions: [.init(name: "a.dot.test", type: .a)],
                    answers: [.init(name: "a.dot.test", address: IPAddress(RefusedHTTP2ConnectionTests.forged)!, ttlSeconds: 300)]
                ).encoded()
                Self.frame(&buffer, type: 0x0, flags: 0x1, stream: 1, payload: answer)
                context.writeAndFlush(NIOAny(buffer), promise: nil)
            }
            context.fireChannelActive()
        }

        /// Reads the client's frames (after its 24-byte preface) and counts HEADERS.
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Array(buffer: unwrapInboundIn(data))
            scan.withLock { state in
                state.bytes += bytes
                while true {
                    if !state.sawPreface {
                        guard state.bytes.count >= 24 else { return }
                        state.bytes.removeFirst(24)
                        state.sawPreface = true
                    }
                    guard state.bytes.count >= 9 else { return }
                    let length = Int(state.bytes[0]) << 16 | Int(state.bytes[1]) << 8 | Int(state.bytes[2])
                    guard state.bytes.count >= 9 + length else { return }
                    if state.bytes[3] == 0x1 { headersReceived.value.withLock { $0 += 1 } }
                    state.bytes.removeFirst(9 + length)
                }
            }
        }

        static func frame(_ buffer: inout ByteBuffer, type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) {
            buffer.writeBytes([UInt8(payload.count >> 16 & 0xFF), UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF), type, flags])
            buffer.writeInteger(stream)
            buffer.writeBytes(payload)
        }
    }

    @Test func aForgedResponseInTheSameReadAsTheSettingsIsNeverTaken() async throws {
        let headersReceived = Count()
        try await TestCertificate.with(subjectAltName: "IP:127.0.0.1,DNS:other.test") { certificate, key in
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            )
            tls.applicationProtocols = ["h2"]
            let context = try NIOSSLContext(configuration: tls)
            let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            NIOSSLServerHandler(context: context), HostileHandler(headersReceived: headersReceived),
                        ])
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            let port = server.localAddress!.port!
            do {
                var connection = ServiceConnection(servers: [try ServiceEndpoint(parsing: "https://127.0.0.1:\(port)")])
                connection.serverName = "dot.test"
                connection.extraTrustRootsPEMFile = certificate
                connection.budget = .seconds(10)
                connection.attemptTimeout = .seconds(10)
                let source = try DoHSource(configuration: .init(connection: connection))
                let outcome: Result<SourceAnswer, ResolutionError>
                do {
                    outcome = .success(try await source.query(try HostName("a.dot.test"), families: .ipv4))
                } catch let error as ResolutionError {
                    outcome = .failure(error)
                }
                await source.shutdown()
                switch outcome {
                case .success(let answer):
                    Issue.record("the forged answer was taken: \(answer)")
                case .failure(let error):
                    #expect(error.code == .certificateRejected, "\(error)")
                    #expect(error.message.contains("does not hold dot.test as a DNS name"), "\(error)")
                }
                #expect(headersReceived.value.withLock { $0 } == 0, "a request went out on the refused connection")
            } catch {
                try? await server.close()
                throw error
            }
            try await server.close()
        }
    }
}
