import HTTPDNSSynchronization
import NIOCore
import NIOPosix
import Testing

@testable import HTTPDNSClient

/// The pool of kept-alive connections the DoT and HTTPS sources share, over real TCP connections to a listener on
/// loopback: who waits for what, and what ``ConnectionSlots/shutdown()`` closes.
@Suite("Connection slots")
struct ConnectionSlotsTests {
    /// A connection as the slots see it: a channel, and whether it still takes requests (a GOAWAY would clear it).
    final class Connection: SlotConnection {
        let channel: any Channel
        private let retired = Mutex(false)

        init(channel: any Channel) { self.channel = channel }

        var isActive: Bool { channel.isActive && !retired.withLock { $0 } }
        func retire() { retired.withLock { $0 = true } }
        func close() { channel.close(promise: nil) }
    }

    /// A TCP listener on 127.0.0.1 that accepts and holds every connection, and the group both sides run on.
    final class Listener {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server: any Channel

        init() async throws {
            server = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        }

        func connect() -> EventLoopFuture<Connection> {
            ClientBootstrap(group: group).connect(to: server.localAddress!).map { Connection(channel: $0) }
        }

        func stop() async throws {
            try await server.close()
            try await group.shutdownGracefully()
        }
    }

    /// A request waiting for a connection another is opening stops waiting when its task is cancelled, long before its
    /// deadline (30 s, when it would fail as timed out); the connection goes on opening for the others.
    @Test func waitingForAConnectionEndsWhenTheTaskIsCancelled() async throws {
        let listener = try await Listener()
        let slots = ConnectionSlots<Connection>(count: 1)
        let opening = listener.group.next().makePromise(of: Connection.self)
        let started = AsyncStream<Void>.makeStream()
        let waiter = Task {
            try await slots.connection(at: 0, deadline: .now() + .seconds(30)) {
                started.continuation.yield()
                return opening.futureResult
            }
        }
        for await _ in started.stream { break }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(slots.opened == 1)
        // The connection, once up, is the one the next request gets.
        let connection = try await listener.connect().get()
        opening.succeed(connection)
        let next = try await slots.connection(at: 0, deadline: .now() + .seconds(60)) {
            Issue.record("a second connection was opened")
            return listener.connect()
        }
        #expect(next === connection)
        await slots.shutdown()
        #expect(!connection.channel.isActive)
        try await listener.stop()
    }

    /// A connection that no longer takes requests (a GOAWAY, say) but is still finishing its own is replaced by a new
    /// one for the next request, and closed by ``ConnectionSlots/shutdown()`` as well; so is one a network change set
    /// aside without closing it at once.
    @Test func shutdownClosesTheConnectionsStillFinishingTheirRequests() async throws {
        let listener = try await Listener()
        let slots = ConnectionSlots<Connection>(count: 2)
        let first = try await slots.connection(at: 0, deadline: .now() + .seconds(60)) { listener.connect() }
        first.retire()
        let second = try await slots.connection(at: 0, deadline: .now() + .seconds(60)) { listener.connect() }
        #expect(second !== first)
        #expect(first.channel.isActive, "set aside, not closed: its requests may still be answered")
        let other = try await slots.connection(at: 1, deadline: .now() + .seconds(60)) { listener.connect() }
        // A network change whose connections close later (when their requests are over).
        slots.closeAll(by: { _ in })
        #expect(other.channel.isActive && second.channel.isActive)
        #expect(slots.opened == 3)
        await slots.shutdown()
        for connection in [first, second, other] { #expect(!connection.channel.isActive) }
        try await listener.stop()
    }

    /// After ``ConnectionSlots/shutdown()`` no connection is opened, and a request fails at once saying so.
    @Test func noConnectionAfterShutdown() async throws {
        let slots = ConnectionSlots<Connection>(count: 1)
        await slots.shutdown()
        await #expect(throws: ConnectionSlotsError.self) {
            _ = try await slots.connection(at: 0, deadline: .now() + .seconds(60)) {
                Issue.record("a connection was opened after shutdown")
                return MultiThreadedEventLoopGroup.singleton.next().makeFailedFuture(ConnectionSlotsError.shutDown)
            }
        }
        #expect(slots.opened == 0)
    }
}
