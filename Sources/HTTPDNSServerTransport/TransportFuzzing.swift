import Logging
import NIOCore
import NIOEmbedded

/// Entry points for the fuzz targets in `Fuzz/` (libFuzzer): raw bytes into the HTTP/1.1 pipeline and the HTTP/2
/// connection, as a client's bytes arrive after TLS. Not API: `@_spi(Fuzzing)` keeps it out of the public
/// interface. `HTTPDNSServer`'s `ServiceFuzzing` puts the real service behind them.
@_spi(Fuzzing) public enum TransportFuzzing {
    private static let quiet = Logger(label: "httpdns.fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

    /// `bytes` into the HTTP/1.1 pipeline on an `EmbeddedChannel`: the request decoder, the front (hits answered
    /// there), the response encoder; then the header and idle timeouts pass. What the front hands on reaches the end
    /// of the pipeline, where the router would take it.
    public static func http1(_ bytes: UnsafeRawBufferPointer, cacheHits: any CacheHitAnswering) {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        do {
            try ServiceHTTP1Channel.configure(channel.pipeline.syncOperations, cacheHits: cacheHits, idleTimeout: .seconds(60), headerTimeout: .seconds(10))
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
            try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
            channel.embeddedEventLoop.advanceTime(by: .seconds(61))
        } catch {
            // Malformed input ends in an error the pipeline reports: expected.
        }
    }

    /// `bytes` into ``HTTP2ServerConnection`` on a `NIOAsyncTestingChannel`, `router` behind it; then the header
    /// timeout passes and the connection closes. Returns once every router task the connection started has ended.
    public static func http2(_ bytes: [UInt8], cacheHits: any CacheHitAnswering, router: any RouterResponding) async {
        let channel = NIOAsyncTestingChannel()
        let connection = HTTP2ServerConnection(
            configuration: HTTP2ServerConnection.Configuration(),
            bodyBudget: RequestBodyBudget(limit: 1 << 20),
            cacheHits: cacheHits,
            router: router,
            logger: quiet
        )
        do {
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9))
            try await channel.pipeline.addHandler(connection)
            let settled = try await channel.eventLoop.submit { connection.closedAndSettled() }.get()
            try await channel.writeInbound(ByteBuffer(bytes: bytes))
            await channel.testingEventLoop.advanceTime(by: .seconds(11))
            try? await channel.close()
            try await settled.get()
        } catch {
            // Expected for malformed input.
        }
        _ = try? await channel.finish()
    }
}
