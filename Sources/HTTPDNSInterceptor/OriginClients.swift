import AsyncHTTPClient
import HTTPDNSCore
import HTTPDNSNetworking
import HTTPDNSSynchronization
import Logging

/// The AsyncHTTPClients the interceptor sends through: one per (host, address), because `dnsOverride` is fixed per
/// client and maps a host to one address. Each keeps its own pool of connections to that address, which carry the
/// host in SNI and are verified for it.
///
/// At most `limit` clients are kept; the least recently used is retired to make room. A client is shut down only once
/// nothing uses it: every request sent on it, and every response body still streaming from it, holds a ``Lease``.
final class OriginClients: Sendable {
    struct Key: Hashable, Sendable {
        var host: String
        var address: IPAddress
    }

    /// A use of one client. The client is not shut down while a lease on it lives; the last lease of a retired
    /// client shuts it down as it goes.
    final class Lease: Sendable {
        let client: HTTPClient
        private let entry: Entry
        private let owner: OriginClients

        fileprivate init(entry: Entry, owner: OriginClients) {
            self.client = entry.client
            self.entry = entry
            self.owner = owner
        }

        deinit { owner.release(entry) }
    }

    /// A client and its bookkeeping. The variables are read and written only under ``OriginClients``'s lock, so a
    /// lease costs one lookup by key, and its release none unless it was the last one.
    fileprivate final class Entry: @unchecked Sendable {
        let client: HTTPClient
        let id: UInt64
        /// The tick of its last lease.
        var lastUsed: UInt64 = 0
        /// The leases alive.
        var leases = 0

        init(client: HTTPClient, id: UInt64) {
            self.client = client
            self.id = id
        }
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Clients no longer handed out, still leased: shut down when their last lease ends.
        var retired: [UInt64: Entry] = [:]
        /// Shut-downs begun when a client was evicted idle or a retired client's last lease ended, awaited by
        /// ``shutdown()``. Registered under the same lock that decided them, so shutdown() cannot miss one.
        var closing: [UInt64: Task<Void, Never>] = [:]
        var tick: UInt64 = 0
        var nextID: UInt64 = 0
        /// Set by the first ``shutdown()``: from then on no client is handed out.
        var shutdown: Task<Void, Never>?
        var shutDown: Bool { shutdown != nil }
    }

    private let limit: Int
    private let makeClient: @Sendable (Key) -> HTTPClient
    private let state = Mutex(State())

    private let logger: Logger

    init(limit: Int, logger: Logger, makeClient: @escaping @Sendable (Key) -> HTTPClient) {
        self.limit = limit
        self.logger = logger
        self.makeClient = makeClient
    }

    // Dropped without shutdown() (no lease or closing client holds it any more): the clients left are shut down in
    // the background, with a warning, instead of stopping a debug build in AsyncHTTPClient's deinit.
    deinit {
        let left = state.withLock { state in state.shutdown == nil ? state.entries.values.map(\.client) + state.retired.values.map(\.client) : [] }
        DroppedClients.shutDown(left, owner: "InterceptingHTTPClient", logger: logger)
    }

    /// Whether ``shutdown()`` has begun.
    var isShutDown: Bool { state.withLock { $0.shutDown } }

    /// How many clients are kept (retired ones still streaming included).
    var count: Int { state.withLock { $0.entries.count + $0.retired.count } }

    /// A lease on the client for `key`, made when there is none.
    /// - Returns: nil once ``shutdown()`` has begun.
    func lease(_ key: Key) -> Lease? {
        let entry = state.withLock { state -> Entry? in
            guard !state.shutDown else { return nil }
            state.tick += 1
            let entry: Entry
            if let existing = state.entries[key] {
                entry = existing
            } else {
                if state.entries.count >= limit, let (oldestKey, oldest) = state.entries.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                    state.entries[oldestKey] = nil
                    if oldest.leases == 0 {
                        close(oldest, in: &state)
                    } else {
                        state.retired[oldest.id] = oldest
                    }
                }
                entry = Entry(client: makeClient(key), id: state.nextID)
                state.nextID += 1
                state.entries[key] = entry
            }
            entry.lastUsed = state.tick
            entry.leases += 1
            return entry
        }
        return entry.map { Lease(entry: $0, owner: self) }
    }

    fileprivate func release(_ entry: Entry) {
        state.withLock { state in
            entry.leases -= 1
            // Not in `retired` any more once shutdown() has begun: it shut the client down already.
            guard entry.leases == 0, state.retired.removeValue(forKey: entry.id) != nil else { return }
            close(entry, in: &state)
        }
    }

    /// Begins shutting `entry`'s client down, recorded in `state` for ``shutdown()`` to await.
    private func close(_ entry: Entry, in state: inout State) {
        state.closing[entry.id] = Task { [self] in
            try? await entry.client.shutdown()
            _ = self.state.withLock { $0.closing.removeValue(forKey: entry.id) }
        }
    }

    /// Shuts every client down, leased or not (requests still running on them fail), and returns once all are.
    func shutdown() async {
        // One shutdown, which every caller awaits: a second call returns only once the first's work is done.
        let shutdown = state.withLock { state -> Task<Void, Never> in
            if let running = state.shutdown { return running }
            let clients = state.entries.values.map(\.client) + state.retired.values.map(\.client)
            let closing = Array(state.closing.values)
            state.entries = [:]
            state.retired = [:]
            let task = Task {
                for client in clients { try? await client.shutdown() }
                for task in closing { await task.value }
            }
            state.shutdown = task
            return task
        }
        await shutdown.value
    }
}
