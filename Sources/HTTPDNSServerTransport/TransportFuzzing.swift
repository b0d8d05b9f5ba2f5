// Built only with the package trait `Fuzzing`, which Fuzz/Package.swift enables: no product a user installs
// holds the fuzz entry points or NIOEmbedded.
#if Fuzzing
import HTTPDNSSynchronization
import HummingbirdCore
import Logging
import NIOCore
import NIOEmbedded

/// Entry points for the fuzz targets in `Fuzz/` (libFuzzer): raw bytes into the HTTP/1.1 pipeline and the HTTP/2
/// connection, as a client's bytes arrive after TLS. Not API: `@_spi(Fuzzing)` keeps it out of the public
/// interface. `HTTPDNSServer`'s `ServiceFuzzing` puts the real service behind them.
@_spi(Fuzzing) public enum TransportFuzzing {
    fileprivate static let quiet = Logger(label: "httpdns.fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

    /// `bytes` into the HTTP/1.1 pipeline on an `EmbeddedChannel`: the request decoder, the front (hits answered
    /// there, with their routes' query parameters), the response encoder; then the header and idle timeouts pass.
    /// What the front hands on reaches the end of the pipeline, where the router would take it: the router's own
    /// routes are not reached here (the HTTP/2 target reaches them).
    public static func http1(_ bytes: UnsafeRawBufferPointer, cacheHits: any CacheHitAnswering) {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        do {
            try ServiceHTTP1Channel.configure(
                channel.pipeline.syncOperations,
                cacheHits: cacheHits,
                idleTimeout: .seconds(60),
                headerTimeout: .seconds(10)
            )
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
        var input = bytes[...]
        var reads: [ArraySlice<UInt8>] = []
        for _ in 0..<(Int(input.popFirst() ?? 0) & 0x0F) {
            guard let length = input.popFirst() else { break }
            reads.append(input.prefix(Int(length) * 4 + 1))
            input = input.dropFirst(Int(length) * 4 + 1)
        }
        reads.append(input)
        return await exchange(
            reads,
            betweenReads: .seconds(1),
            beforeClose: .seconds(11),
            routerNeverWaits: false,
            streamBudget: 50,
            cacheHits: cacheHits,
            router: router
        ).broken
    }

    /// `bytes` into ``HTTP2ServerConnection`` in one read, for the differential fuzz target, which feeds the same
    /// bytes to swift-nio-http2: no time passes (no timeout fires), no request is a cache hit, and the router
    /// answers every request it is handed with 200 once the read has ended, recording it.
    /// - Returns: the bytes the connection wrote, the requests its router was handed, and what was still counted
    ///   after the close.
    public static func http2Exchange(_ bytes: [UInt8]) async -> HTTP2Exchange {
        let router = RecordingRouter()
        let result = await exchange(
            [bytes[...]],
            betweenReads: .zero,
            beforeClose: .zero,
            routerNeverWaits: true,
            streamBudget: .max,
            cacheHits: NoCacheHits(),
            router: router
        )
        // Here no step of the harness may fail: a failure would leave the output short, and the comparison
        // meaningless.
        let broken = result.broken ?? result.failure.map { "the harness failed: \($0)" }
        return HTTP2Exchange(output: result.output, requests: router.requests, broken: broken)
    }

    /// Each of `reads` into a new connection (the service's stream budget `streamBudget`), `betweenReads` of the event
    /// loop's time after each; then the router's tasks are given time to answer (or waited for, when
    /// `routerNeverWaits`: its responses have no body, so no flow-control credit can hold them up), `beforeClose`
    /// passes, and the channel is closed. `failure` is a channel operation that threw.
    private static func exchange(
        _ reads: [ArraySlice<UInt8>],
        betweenReads: TimeAmount,
        beforeClose: TimeAmount,
        routerNeverWaits: Bool,
        streamBudget: Int,
        cacheHits: any CacheHitAnswering,
        router: any RouterResponding
    ) async -> (output: [UInt8], broken: String?, failure: (any Error)?) {
        let channel = NIOAsyncTestingChannel()
        let budget = RequestBudget(bodyBytes: 1 << 20, streams: streamBudget)
        // Not Sendable: it is used on the testing channel's loop only, which runs its work inside this task, so
        // nothing else can touch it meanwhile.
        nonisolated(unsafe) let connection = HTTP2ServerConnection(
            configuration: HTTP2ServerConnection.Configuration(),
            bodyBudget: budget,
            cacheHits: cacheHits,
            router: router,
            logger: quiet
        )
        var output: [UInt8] = []
        func collectOutput() async {
            // Kept by the channel after its close too.
            while let written = try? await channel.readOutbound(as: ByteBuffer.self) { output += written.readableBytesView }
        }
        do {
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9))
            try await channel.testingEventLoop.executeInContext { try channel.pipeline.syncOperations.addHandler(connection) }
            let settled = try await channel.eventLoop.submit { connection.closedAndSettled() }.get()
            for read in reads {
                try await channel.writeInbound(ByteBuffer(bytes: read))
                if betweenReads > .zero { await channel.testingEventLoop.advanceTime(by: betweenReads) }
            }
            if routerNeverWaits {
                try await channel.eventLoop.flatSubmit { connection.routerTasksIdle(on: channel.eventLoop) }.get()
            } else {
                // A response may wait for flow-control credit the client never gives, until its stream's deadline.
                for _ in 0..<1_000 {
                    guard try await channel.eventLoop.submit({ connection.routerTasksRunning }).get() > 0 else { break }
                    await Task.yield()
                }
            }
            if beforeClose > .zero { await channel.testingEventLoop.advanceTime(by: beforeClose) }
            await collectOutput()
            try? await channel.close()
            try await settled.get()
            await collectOutput()
            let (held, resetWork, orphans) = try await channel.eventLoop.submit {
                (connection.bodyBytesHeld, connection.resetRouterWork, connection.routerWorkWithoutStream.count)
            }.get()
            _ = try? await channel.finish()
            guard held == 0 && resetWork == 0 && orphans == 0 && budget.bytesHeld == 0 && budget.streamsOpen == 0 else {
                let broken =
                    "after the close: \(held) body bytes held, \(budget.bytesHeld) in the budget, \(budget.streamsOpen) streams, \(resetWork) reset router work, \(orphans) router work without a stream"
                return (output, broken, nil)
            }
            return (output, nil, nil)
        } catch {
            // The connection handles malformed input itself; a channel operation that fails is told to the caller.
            await collectOutput()
            _ = try? await channel.finish()
            return (output, nil, error)
        }
    }
}

/// What ``HTTP2ServerConnection`` did with one client's bytes (``TransportFuzzing/http2Exchange(_:)``).
@_spi(Fuzzing) public struct HTTP2Exchange: Sendable {
    /// Every byte the connection wrote.
    public let output: [UInt8]
    /// The requests handed to the router, in the order the router was called (which its tasks decide).
    public let requests: [HTTP2AcceptedRequest]
    /// What was still counted after the close; nil when all was let go.
    public let broken: String?
}

/// A request an HTTP/2 connection took whole and handed on.
@_spi(Fuzzing) public struct HTTP2AcceptedRequest: Hashable, Sendable, CustomStringConvertible {
    public let method: String
    public let path: String
    public let authority: String?
    public let bodyBytes: Int

    public init(method: String, path: String, authority: String?, bodyBytes: Int) {
        self.method = method
        self.path = path
        self.authority = authority
        self.bodyBytes = bodyBytes
    }

    public var description: String {
        "\(method) \(path.debugDescription) (authority \(authority?.debugDescription ?? "none"), \(bodyBytes) body bytes)"
    }
}

/// Answers nothing on the event loop: every request goes to the router.
private struct NoCacheHits: CacheHitAnswering {
    let requestMetrics = RequestMetrics()

    func reply(toGET target: String, channel: any Channel) -> (Reply, route: String)? { nil }
}

/// Answers every request with 200 and an empty body, after reading its body, and records it.
private final class RecordingRouter: RouterResponding {
    let maxBodyBytes = 1 << 20
    let logger = TransportFuzzing.quiet
    private let recorded = Mutex<[HTTP2AcceptedRequest]>([])

    var requests: [HTTP2AcceptedRequest] { recorded.withLock { $0 } }

    func respond(to request: Request, channel: any Channel) async -> Response {
        var bodyBytes = 0
        do {
            for try await part in request.body { bodyBytes += part.readableBytes }
        } catch {
            // A body the router was handed whole cannot fail.
        }
        let accepted = HTTP2AcceptedRequest(
            method: request.head.method.rawValue,
            path: request.head.path ?? "",
            authority: request.head.authority,
            bodyBytes: bodyBytes
        )
        recorded.withLock { $0.append(accepted) }
        return Response(status: .ok)
    }
}
#endif
