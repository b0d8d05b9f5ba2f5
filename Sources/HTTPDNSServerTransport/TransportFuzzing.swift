import Logging
import NIOCore
import NIOEmbedded

/// Entry points for the fuzz targets in `Fuzz/` (libFuzzer): raw bytes into the HTTP/1.1 pipeline and the HTTP/2
/// connection, as a client's bytes arrive after TLS. Not API: `@_spi(Fuzzing)` keeps it out of the public
/// interface. `HTTPDNSServer`'s `ServiceFuzzing` puts the real service behind them.
@_spi(Fuzzing) public enum TransportFuzzing {
    private static let quiet = Logger(label: "httpdns.fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

    /// `bytes` into the HTTP/1.1 pipeline on an `EmbeddedChannel`: the request decoder, the front (hits answered
    /// there, with their routes' query parameters), the response encoder; then the header and idle timeouts pass.
    /// What the front hands on reaches the end of the pipeline, where the router would take it: the router's own
    /// routes are not reached here (the HTTP/2 target reaches them).
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

    /// `bytes` into ``HTTP2ServerConnection`` on a `NIOAsyncTestingChannel`, `router` behind it, then checks what
    /// must hold of any connection once it has closed and its tasks have ended: no request body held, on the
    /// connection or in the service's budget, and no stream or router work counted.
    /// - Returns: what was still counted after the close, or nil when all was let go (the fuzz target stops on it).
    ///
    /// The first byte says how the rest is cut into reads: its low four bits are the number of cuts, and each cut
    /// takes a byte saying how long the read before it is (times 4, plus 1). A second passes between reads, so
    /// frames split across reads, the end of a read and the timeouts all get their turn. Before the close, the
    /// router's tasks are given time to answer.
    public static func http2(_ bytes: [UInt8], cacheHits: any CacheHitAnswering, router: any RouterResponding) async -> String? {
        let channel = NIOAsyncTestingChannel()
        let budget = RequestBudget(bodyBytes: 1 << 20, streams: 50)
        let connection = HTTP2ServerConnection(
            configuration: HTTP2ServerConnection.Configuration(),
            bodyBudget: budget,
            cacheHits: cacheHits,
            router: router,
            logger: quiet
        )
        var input = bytes[...]
        var reads: [ArraySlice<UInt8>] = []
        for _ in 0..<(Int(input.popFirst() ?? 0) & 0x0F) {
            guard let length = input.popFirst() else { break }
            reads.append(input.prefix(Int(length) * 4 + 1))
            input = input.dropFirst(Int(length) * 4 + 1)
        }
        reads.append(input)
        do {
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9))
            try await channel.pipeline.addHandler(connection)
            let settled = try await channel.eventLoop.submit { connection.closedAndSettled() }.get()
            for read in reads {
                try await channel.writeInbound(ByteBuffer(bytes: read))
                await channel.testingEventLoop.advanceTime(by: .seconds(1))
            }
            for _ in 0..<1_000 {
                guard try await channel.eventLoop.submit({ connection.routerTasksRunning }).get() > 0 else { break }
                await Task.yield()
            }
            await channel.testingEventLoop.advanceTime(by: .seconds(11))
            try? await channel.close()
            try await settled.get()
            let (held, resetWork, orphans) = try await channel.eventLoop.submit {
                (connection.bodyBytesHeld, connection.resetRouterWork, connection.routerWorkWithoutStream.count)
            }.get()
            _ = try? await channel.finish()
            guard held == 0 && resetWork == 0 && orphans == 0 && budget.bytesHeld == 0 && budget.streamsOpen == 0 else {
                return "after the close: \(held) body bytes held, \(budget.bytesHeld) in the budget, \(budget.streamsOpen) streams, \(resetWork) reset router work, \(orphans) router work without a stream"
            }
            return nil
        } catch {
            // Expected for malformed input.
        }
        _ = try? await channel.finish()
        return nil
    }
}
