import HTTPDNSCore
import HTTPDNSSynchronization
import NIOCore
import NIOPosix

/// A kept-alive connection that ``ConnectionSlots`` holds: one of ``DoTConnection`` and ``HTTP2ServiceConnection``.
protocol SlotConnection: AnyObject, Sendable {
    var channel: any Channel { get }
    /// Whether requests can still go out on it.
    var isActive: Bool { get }
    func close()
}

extension SlotConnection {
    /// Connects to `address`:`port` by `deadline`, sets the channel's pipeline up with `pipeline`, whose handlers
    /// complete its promise once TLS is up and every check of the certificate passed (or fail it), and makes the
    /// connection of the channel with `connection`. The outcome is decided once, on the event loop: connected and
    /// checked, failed, or out of time (`timedOut`: the handshake too is bounded by the deadline), whichever comes
    /// first; a channel that lost closes.
    static func open(
        to address: IPAddress,
        port: Int,
        on eventLoop: any EventLoop,
        deadline: NIODeadline,
        timedOut: any Error,
        pipeline: @escaping @Sendable (any Channel, EventLoopPromise<Void>) throws -> Void,
        connection: @escaping @Sendable (any Channel) throws -> Self
    ) -> EventLoopFuture<Self> {
        let socketAddress: SocketAddress
        do {
            socketAddress = try SocketAddress(ipAddress: "\(address)", port: port)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let ready = eventLoop.makePromise(of: Void.self)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(max(TimeAmount.nanoseconds(1), deadline - .now()))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try pipeline(channel, ready) }
            }
        let result = eventLoop.makePromise(of: Self.self)
        let state = NIOLoopBoundBox.makeBoxSendingValue((done: false, channel: (any Channel)?.none), eventLoop: eventLoop)
        let finish: @Sendable (Result<Self, any Error>) -> Void = { outcome in
            guard !state.value.done else {
                if case .success(let connection) = outcome { connection.close() }
                return
            }
            state.value.done = true
            if case .failure = outcome { state.value.channel?.close(promise: nil) }
            result.completeWith(outcome)
        }
        let timer = eventLoop.scheduleTask(deadline: deadline) { finish(.failure(timedOut)) }
        bootstrap.connect(to: socketAddress).whenComplete { connected in
            switch connected {
            case .failure(let error):
                // No channel, so no handler to complete it: a promise left pending is a leak NIO stops on.
                ready.fail(error)
                finish(.failure(error))
            case .success(let channel):
                state.value.channel = channel
                if state.value.done { channel.close(promise: nil) }
                ready.futureResult.whenComplete { checked in
                    finish(checked.flatMap { Result { try connection(channel) } })
                }
            }
        }
        return result.futureResult.always { _ in timer.cancel() }
    }
}

/// Why ``ConnectionSlots`` gave no connection, besides the connect's own error.
enum ConnectionSlotsError: Error, CustomStringConvertible {
    case shutDown
    /// The connection was not up by the deadline of the request waiting for it.
    case timedOut

    var description: String {
        switch self {
        case .shutDown: "the client was shut down"
        case .timedOut: "the connection was not up in time"
        }
    }
}

/// True the first time ``take()`` is called only, from any thread.
private final class OnceFlag: Sendable {
    private let done = Mutex(false)
    func take() -> Bool { done.withLock { done in defer { done = true }; return !done } }
}

/// One kept-alive connection per server, opened by the first request that needs it and shared by every request
/// after: a request finds an open connection without waiting on anything, and those that come while one is being
/// opened wait for that one rather than opening their own.
final class ConnectionSlots<Connection: SlotConnection>: Sendable {
    private enum Slot {
        case idle
        case connecting(EventLoopFuture<Connection>)
        case open(Connection)
    }

    private struct State {
        var slots: [Slot]
        /// Connections no longer in a slot that may still be open (replaced while they finish their requests, or
        /// retired by ``closeAll(by:)``), until their channel closes: ``shutdown()`` closes them too.
        var leaving: [ObjectIdentifier: Connection] = [:]
        var shutDown = false
        /// Connections begun, for tests.
        var opened = 0

        mutating func leave(_ connection: Connection) {
            leaving[ObjectIdentifier(connection)] = connection
        }
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(slots: Array(repeating: .idle, count: count)))
    }

    /// The open, active connection of server `index`, if it has one: what a request can use without waiting.
    func openConnection(at index: Int) -> Connection? {
        state.withLock { state in
            guard !state.shutDown, case .open(let connection) = state.slots[index], connection.isActive else { return nil }
            return connection
        }
    }

    /// The open connection of server `index`, or a new one `connect` opens, waited for by at most `deadline`.
    /// - Throws: ``ConnectionSlotsError``, or the error `connect`'s future failed with.
    func connection(at index: Int, deadline: NIODeadline, connect: () -> EventLoopFuture<Connection>) async throws -> Connection {
        // The common case, an open connection: no future and no wait.
        if let open = openConnection(at: index) { return open }
        let (pending, isNew, replaced): (EventLoopFuture<Connection>?, Bool, Connection?) = state.withLock { state in
            guard !state.shutDown else { return (nil, false, nil) }
            var replaced: Connection?
            switch state.slots[index] {
            case .open(let connection) where connection.isActive:
                return (connection.channel.eventLoop.makeSucceededFuture(connection), false, nil)
            case .connecting(let future):
                return (future, false, nil)
            case .open(let old):
                // Not active any more (told to go away, say), though it may still finish requests of its own.
                state.leave(old)
                replaced = old
            case .idle:
                break
            }
            let future = connect()
            state.slots[index] = .connecting(future)
            state.opened += 1
            return (future, true, replaced)
        }
        if let replaced { watch(replaced) }
        guard let pending else { throw ConnectionSlotsError.shutDown }
        // Outside the lock: on an event loop, a future already complete runs the callback at once.
        if isNew {
            pending.whenComplete { [weak self] result in self?.connected(result, at: index, future: pending) }
        }
        // A connection another request started may outlive this one's deadline: wait no longer than it.
        return try await Self.wait(for: pending, until: deadline)
    }

    /// `future`'s connection, or ``ConnectionSlotsError/timedOut`` at `deadline`, whichever comes first.
    private static func wait(for future: EventLoopFuture<Connection>, until deadline: NIODeadline) async throws -> Connection {
        let once = OnceFlag()
        let resumed = Mutex<CheckedContinuation<Connection, any Error>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                resumed.withLock { $0 = continuation }
                let timer = future.eventLoop.scheduleTask(deadline: deadline) {
                    if once.take() { continuation.resume(throwing: ConnectionSlotsError.timedOut) }
                }
                future.whenComplete { result in
                    timer.cancel()
                    if once.take() { continuation.resume(with: result) }
                }
                if Task.isCancelled, once.take() { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            // The connection goes on for the requests that wait for it; this one stops waiting.
            if let continuation = resumed.withLock({ $0 }), once.take() { continuation.resume(throwing: CancellationError()) }
        }
    }

    /// How many connections were begun.
    var opened: Int { state.withLock { $0.opened } }

    /// The connection to server `index`, once open (nil when there is none, or it failed to open).
    func current(at index: Int) async -> Connection? {
        let slot = state.withLock { $0.slots[index] }
        switch slot {
        case .idle: return nil
        case .open(let connection): return connection
        case .connecting(let future): return try? await future.get()
        }
    }

    private func connected(_ result: Result<Connection, any Error>, at index: Int, future: EventLoopFuture<Connection>) {
        let orphan: Connection? = state.withLock { state in
            guard case .connecting(let current) = state.slots[index], current === future else {
                if case .success(let connection) = result { return connection }
                return nil
            }
            switch result {
            case .success(let connection):
                if state.shutDown { return connection }
                state.slots[index] = .open(connection)
            case .failure:
                state.slots[index] = .idle
            }
            return nil
        }
        // Made after a shutdown or a network change: not used.
        orphan?.close()
    }

    /// Closes `connection` and, if it is still server `index`'s, lets the next request open a new one.
    func forget(_ connection: Connection, at index: Int) {
        state.withLock { state in
            if case .open(let current) = state.slots[index], current === connection { state.slots[index] = .idle }
        }
        connection.close()
    }

    /// Takes a leaving connection off the list once it has closed (at once when it has already).
    private func watch(_ connection: Connection) {
        let id = ObjectIdentifier(connection)
        connection.channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.state.withLock { $0.leaving.removeValue(forKey: id) }
        }
    }

    /// Closes every connection (by `close`, default at once); the next requests open new ones (from a new network,
    /// say).
    func closeAll(by close: @escaping @Sendable (Connection) -> Void = { $0.close() }) {
        let old = state.withLock { state in
            for case .open(let connection) in state.slots { state.leave(connection) }
            defer { state.slots = state.slots.map { _ in .idle } }
            return state.slots
        }
        for case .open(let connection) in old { watch(connection) }
        Self.close(old, by: close)
    }

    /// Closes every connection and takes no more requests; returns once the open ones are closed.
    func shutdown() async {
        let (old, leaving) = state.withLock { state in
            state.shutDown = true
            defer {
                state.slots = state.slots.map { _ in .idle }
                state.leaving = [:]
            }
            return (state.slots, Array(state.leaving.values))
        }
        Self.close(old, by: { $0.close() })
        for connection in leaving { connection.close() }
        for slot in old {
            if case .open(let connection) = slot { try? await connection.channel.closeFuture.get() }
        }
        for connection in leaving { try? await connection.channel.closeFuture.get() }
    }

    private static func close(_ slots: [Slot], by close: @escaping @Sendable (Connection) -> Void) {
        for slot in slots {
            switch slot {
            case .open(let connection): close(connection)
            case .connecting(let future): future.whenSuccess(close)
            case .idle: break
            }
        }
    }

    // Dropped without shutdown(): the connections are closed all the same.
    deinit {
        let (slots, leaving) = state.withLock { ($0.slots, Array($0.leaving.values)) }
        Self.close(slots, by: { $0.close() })
        for connection in leaving { connection.close() }
    }
}
