import CAres
import HTTPDNSCore
import HTTPDNSSynchronization
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The addresses one `ares_getaddrinfo` call returned, with the smallest TTL per family.
struct CAresAddresses: Sendable {
    var ipv4: [IPv4Address] = []
    var ipv4TTL: UInt32 = .max
    var ipv6: [IPv6Address] = []
    var ipv6TTL: UInt32 = .max
}

/// One c-ares channel and the thread that drives it.
///
/// c-ares 1.18 has no event thread of its own, so this one waits in `poll(2)` on the channel's sockets (learnt
/// through `ARES_OPT_SOCK_STATE_CB`) and an `eventfd` that other threads write to hand it work, and calls
/// `ares_process_fd` for whatever is ready or timed out. `poll` has no `FD_SETSIZE` limit, unlike `select`.
///
/// Every c-ares call happens on that thread; lookups and shutdown reach it through ``inbox``.
final class CAresEventLoop: @unchecked Sendable {
    // `@unchecked Sendable` is sound because: `channel` and `sockets` are read and written only on the event
    // thread once `init` has returned (the thread starts at the end of `init`, and `pthread_create` orders the
    // writes before it); `inbox` is a Mutex; `wakeFD`, `logger` and `thread` are written only in `init`.
    private var channel: ares_channel?
    private var sockets: [Int32: (readable: Bool, writable: Bool)] = [:]
    private let inbox = Mutex(Inbox())
    private let wakeFD: Int32
    private let logger: Logger
    private var thread: pthread_t = pthread_t()

    private struct Inbox {
        enum Phase { case running, stopping, stopped }
        var lookups: [any CAresQuery] = []
        /// The eventfd has been written since the thread last took the lookups.
        var wakePending = false
        var phase = Phase.running
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private static let libraryInitialized: Bool = ares_library_init(ARES_LIB_INIT_ALL) == ARES_SUCCESS

    init(configuration: CAresSource.Configuration, logger: Logger) throws {
        guard Self.libraryInitialized else {
            throw ResolutionError(.internalError, "c-ares could not be initialised (ares_library_init failed)")
        }
        self.logger = logger
        let fd = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard fd >= 0 else {
            throw ResolutionError(.internalError, "could not create the c-ares wake-up eventfd: \(String(cString: strerror(errno)))")
        }
        self.wakeFD = fd
        do {
            try openChannel(configuration)
        } catch {
            close(fd)
            throw error
        }
        let retained = Unmanaged.passRetained(self)
        let created = pthread_create(
            &thread,
            nil,
            { argument in
                let loop = Unmanaged<CAresEventLoop>.fromOpaque(argument!).takeRetainedValue()
                loop.run()
                return nil
            },
            retained.toOpaque()
        )
        guard created == 0 else {
            retained.release()
            ares_destroy(channel)
            close(fd)
            throw ResolutionError(.internalError, "could not start the c-ares thread: \(String(cString: strerror(created)))")
        }
    }

    private func openChannel(_ configuration: CAresSource.Configuration) throws {
        var options = ares_options()
        let mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_LOOKUPS | ARES_OPT_SOCK_STATE_CB
        options.flags = ARES_FLAG_NOSEARCH | (configuration.transport.usesTCP ? ARES_FLAG_USEVC : 0)
        // c-ares 1.18 drops SERVFAIL, NOTIMP and REFUSED answers to try the next server, and when none is left
        // ends the lookup with ARES_ECONNREFUSED, so they would read as "unreachable". With a single server
        // there is no failover to lose: let those answers through so they map to refused / serverFailure.
        if configuration.servers.count == 1 { options.flags |= ARES_FLAG_NOCHECKRESP }
        options.timeout = configuration.timeoutMilliseconds
        options.tries = Int32(clamping: configuration.tries)
        options.sock_state_cb = { data, socket, readable, writable in
            let loop = Unmanaged<CAresEventLoop>.fromOpaque(data!).takeUnretainedValue()
            loop.socketStateChanged(socket, readable: readable != 0, writable: writable != 0)
        }
        options.sock_state_cb_data = Unmanaged.passUnretained(self).toOpaque()
        // DNS only: /etc/hosts is the system source's business, and a hijack-resistant lookup must not read it.
        let status = "b".withCString { lookups in
            options.lookups = UnsafeMutablePointer(mutating: lookups)
            return ares_init_options(&channel, &options, mask)
        }
        guard status == ARES_SUCCESS else {
            throw ResolutionError(.internalError, "c-ares could not start a channel: \(String(cString: ares_strerror(status)))")
        }
        guard !configuration.servers.isEmpty else { return }
        let csv = configuration.servers.map(\.description).joined(separator: ",")
        let serverStatus = ares_set_servers_ports_csv(channel, csv)
        guard serverStatus == ARES_SUCCESS else {
            ares_destroy(channel)
            channel = nil
            throw ResolutionError(.internalError, "c-ares rejected the servers \(csv): \(String(cString: ares_strerror(serverStatus)))")
        }
    }

    /// Looks up `name` (fully qualified) on the event thread.
    /// - Returns: the addresses, or the c-ares status of a failed lookup.
    /// - Throws: `CancellationError` when the task is cancelled first (the query itself runs to its end).
    func getAddressInfo(_ name: String, families: AddressFamilies) async throws -> Result<CAresAddresses, CAresStatus> {
        let request = LookupRequest(name: name, families: families)
        return try await result(of: request, request.completion)
    }

    /// Sends `message` (a DNS query, whose ID c-ares replaces with one of its own) on the event thread.
    /// - Returns: the answer's bytes as the server sent them, or the c-ares status of a failed query.
    /// - Throws: `CancellationError` when the task is cancelled first (the query itself runs to its end).
    func send(_ message: [UInt8]) async throws -> Result<[UInt8], CAresStatus> {
        let query = MessageQuery(message: message)
        return try await result(of: query, query.completion)
    }

    /// Submits `query` and waits for it; cancelling the task completes it with `CancellationError`.
    private func result<Value: Sendable>(of query: some CAresQuery, _ once: OnceCompletion<Value>) async throws -> Result<Value, CAresStatus> {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                submit(query, completion: once) { result in
                    if case .failure(let status) = result, status == .cancelledByCaller {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        continuation.resume(returning: result)
                    }
                }
            }
        } onCancel: {
            once.cancel()
        }
    }

    /// Queues `request` for the event thread; `completion` runs exactly once, on that thread (or on the
    /// caller's, when the loop has stopped or the request was cancelled before it was queued).
    func submit(_ request: LookupRequest, completion: @escaping @Sendable (Result<CAresAddresses, CAresStatus>) -> Void) {
        submit(request, completion: request.completion, completion)
    }

    private func submit<Value: Sendable>(
        _ request: some CAresQuery,
        completion once: OnceCompletion<Value>,
        _ completion: @escaping @Sendable (Result<Value, CAresStatus>) -> Void
    ) {
        guard once.install(completion) else { return }
        let accepted = inbox.withLock { inbox in
            guard inbox.phase == .running else { return false }
            inbox.lookups.append(request)
            // One wake-up per batch: the thread takes every queued lookup each time round.
            if !inbox.wakePending {
                inbox.wakePending = true
                wake()
            }
            return true
        }
        if !accepted {
            request.fail(CAresStatus(ARES_EDESTRUCTION))
        }
    }

    /// Stops the thread: lookups in flight fail with `ARES_EDESTRUCTION`, every socket is closed, and the
    /// thread is joined. Idempotent.
    func shutdown() async {
        await withCheckedContinuation { continuation in
            let stopped = inbox.withLock { inbox in
                guard inbox.phase != .stopped else { return true }
                inbox.phase = .stopping
                inbox.stopWaiters.append(continuation)
                wake()
                return false
            }
            if stopped { continuation.resume() }
        }
        // The thread resumed us as its last act: joining waits only for it to return.
        joinOnce()
    }

    private let joined = Mutex(false)

    /// Joins the thread and closes the eventfd, once. Holding the lock through the join makes a concurrent
    /// second `shutdown()` return only after the first has finished.
    private func joinOnce() {
        joined.withLock { joined in
            guard !joined else { return }
            pthread_join(thread, nil)
            joined = true
        }
    }

    /// Asks the thread to stop and detaches it, without waiting: for a source dropped without `shutdown()`,
    /// so its thread, sockets and eventfd still go.
    func stopDetached() {
        joined.withLock { joined in
            guard !joined else { return }
            inbox.withLock { inbox in
                guard inbox.phase == .running else { return }
                inbox.phase = .stopping
                wake()
            }
            pthread_detach(thread)
            joined = true
        }
    }

    /// Wakes the thread. Called with `inbox` locked: the thread closes the eventfd only after it has set the
    /// phase to `.stopped` under that lock.
    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, MemoryLayout<UInt64>.size)
    }

    // MARK: - On the event thread

    private func socketStateChanged(_ socket: Int32, readable: Bool, writable: Bool) {
        if readable || writable {
            sockets[socket] = (readable, writable)
        } else {
            sockets.removeValue(forKey: socket)
        }
    }

    /// The kernel's ID of the event thread, once it runs: for tests that check the thread is gone.
    let threadID = Mutex<pid_t?>(nil)

    private func run() {
        // Named, so it can be told apart in `top -H`, /proc and debuggers.
        httpdns_name_current_thread("httpdns-cares")
        threadID.withLock { $0 = httpdns_current_thread_id() }
        var pollSet: [pollfd] = []
        while true {
            let (lookups, stopping) = inbox.withLock { inbox in
                defer {
                    inbox.lookups.removeAll(keepingCapacity: true)
                    inbox.wakePending = false
                }
                return (inbox.lookups, inbox.phase != .running)
            }
            for request in lookups where !request.isFinished { request.start(on: channel) }
            if stopping { break }

            pollSet.removeAll(keepingCapacity: true)
            pollSet.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            for (socket, interest) in sockets {
                let events = (interest.readable ? POLLIN : 0) | (interest.writable ? POLLOUT : 0)
                pollSet.append(pollfd(fd: socket, events: Int16(events), revents: 0))
            }
            var timeout = timeval()
            let waitMs: Int32 =
                ares_timeout(channel, nil, &timeout).map { next in
                    Int32(clamping: next.pointee.tv_sec * 1000 + (next.pointee.tv_usec + 999) / 1000)
                } ?? -1
            let ready = poll(&pollSet, nfds_t(pollSet.count), waitMs)
            if ready < 0 {
                if errno != EINTR {
                    logger.error("poll failed on the c-ares thread", metadata: ["error": "\(String(cString: strerror(errno)))"])
                }
                continue
            }
            if pollSet[0].revents != 0 {
                var count: UInt64 = 0
                _ = read(wakeFD, &count, MemoryLayout<UInt64>.size)
            }
            var processed = false
            for entry in pollSet.dropFirst() where entry.revents != 0 {
                let readable = Int32(entry.revents) & (POLLIN | POLLERR | POLLHUP) != 0
                let writable = Int32(entry.revents) & POLLOUT != 0
                ares_process_fd(channel, readable ? entry.fd : ARES_SOCKET_BAD, writable ? entry.fd : ARES_SOCKET_BAD)
                processed = true
            }
            if !processed {
                // Nothing to read or write: let c-ares retry or fail whatever has timed out.
                ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD)
            }
        }

        // Fails every lookup in flight (their callbacks run with ARES_EDESTRUCTION) and closes the sockets.
        ares_destroy(channel)
        channel = nil
        let (late, waiters) = inbox.withLock { inbox in
            inbox.phase = .stopped
            defer {
                inbox.lookups = []
                inbox.stopWaiters = []
            }
            return (inbox.lookups, inbox.stopWaiters)
        }
        // Nobody writes the eventfd once the phase is `.stopped`: `wake()` is only called under the lock
        // before that.
        close(wakeFD)
        for request in late { request.fail(CAresStatus(ARES_EDESTRUCTION)) }
        for waiter in waiters { waiter.resume() }
    }

    static func addresses(in result: ares_addrinfo) -> CAresAddresses {
        var addresses = CAresAddresses()
        var chainTTL = UInt32.max
        var cname = result.cnames
        while let link = cname {
            chainTTL = min(chainTTL, UInt32(clamping: link.pointee.ttl))
            cname = link.pointee.next
        }
        var node = result.nodes
        while let current = node {
            let ttl = min(chainTTL, UInt32(clamping: current.pointee.ai_ttl))
            if let address = current.pointee.ai_addr {
                switch current.pointee.ai_family {
                case AF_INET:
                    let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        IPv4Address(UInt32(bigEndian: $0.pointee.sin_addr.s_addr))
                    }
                    addresses.ipv4.append(ipv4)
                    addresses.ipv4TTL = min(addresses.ipv4TTL, ttl)
                case AF_INET6:
                    let ipv6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { IPv6Address($0.pointee.sin6_addr) }
                    addresses.ipv6.append(ipv6)
                    addresses.ipv6TTL = min(addresses.ipv6TTL, ttl)
                default:
                    break
                }
            }
            node = current.pointee.ai_next
        }
        return addresses
    }
}

/// A query for the event thread: started there, or failed when the loop never takes it.
protocol CAresQuery: AnyObject, Sendable {
    /// Whether it has completed already (cancelled before it was started, say).
    var isFinished: Bool { get }
    /// Starts it on `channel`; on the event thread.
    func start(on channel: ares_channel?)
    /// Completes it with `status` unless it has completed already.
    func fail(_ status: CAresStatus)
}

/// One `ares_getaddrinfo` lookup waiting for its callback.
final class LookupRequest: CAresQuery {
    let name: String
    let family: Int32
    let completion = OnceCompletion<CAresAddresses>()

    init(name: String, families: AddressFamilies) {
        self.name = name
        self.family = families == .ipv4 ? AF_INET : families == .ipv6 ? AF_INET6 : AF_UNSPEC
    }

    var isFinished: Bool { completion.isFinished }

    func fail(_ status: CAresStatus) { completion.complete(.failure(status)) }

    func start(on channel: ares_channel?) {
        var hints = ares_addrinfo_hints()
        hints.ai_family = family
        // Keep the order the server gave; c-ares's RFC 6724 sort opens a socket per address.
        hints.ai_flags = ARES_AI_NOSORT
        let argument = Unmanaged.passRetained(self).toOpaque()
        ares_getaddrinfo(
            channel,
            name,
            nil,
            &hints,
            { argument, status, _, result in
                let request = Unmanaged<LookupRequest>.fromOpaque(argument!).takeRetainedValue()
                defer { if let result { ares_freeaddrinfo(result) } }
                if status == ARES_SUCCESS, let result {
                    request.completion.complete(.success(CAresEventLoop.addresses(in: result.pointee)))
                } else {
                    request.completion.complete(.failure(CAresStatus(status)))
                }
            },
            argument
        )
    }
}

/// One DNS message sent as it is (`ares_send`), waiting for the answer's bytes.
final class MessageQuery: CAresQuery {
    let message: [UInt8]
    let completion = OnceCompletion<[UInt8]>()

    init(message: [UInt8]) {
        self.message = message
    }

    var isFinished: Bool { completion.isFinished }

    func fail(_ status: CAresStatus) { completion.complete(.failure(status)) }

    func start(on channel: ares_channel?) {
        let argument = Unmanaged.passRetained(self).toOpaque()
        message.withUnsafeBufferPointer { bytes in
            ares_send(
                channel,
                bytes.baseAddress,
                Int32(bytes.count),
                { argument, status, _, answer, length in
                    let query = Unmanaged<MessageQuery>.fromOpaque(argument!).takeRetainedValue()
                    if status == ARES_SUCCESS, let answer, length > 0 {
                        query.completion.complete(.success(Array(UnsafeBufferPointer(start: answer, count: Int(length)))))
                    } else {
                        query.completion.complete(.failure(CAresStatus(status)))
                    }
                },
                argument
            )
        }
    }
}

/// A completion that runs exactly once: with the callback's result, on cancellation, or on shutdown, whichever
/// comes first.
final class OnceCompletion<Value: Sendable>: Sendable {
    typealias Completion = @Sendable (Result<Value, CAresStatus>) -> Void

    private enum Phase {
        case new
        case waiting(Completion)
        case cancelledEarly
        case finished
    }

    private let phase = Mutex(Phase.new)

    var isFinished: Bool {
        phase.withLock { if case .finished = $0 { true } else { false } }
    }

    /// Stores the completion; returns false (after calling it with ``CAresStatus/cancelledByCaller``) when the
    /// request was cancelled already.
    func install(_ completion: @escaping Completion) -> Bool {
        let cancelled = phase.withLock { phase in
            if case .cancelledEarly = phase {
                phase = .finished
                return true
            }
            phase = .waiting(completion)
            return false
        }
        if cancelled { completion(.failure(.cancelledByCaller)) }
        return !cancelled
    }

    func complete(_ result: Result<Value, CAresStatus>) {
        take()?(result)
    }

    /// Completes with ``CAresStatus/cancelledByCaller`` unless it has completed already. c-ares 1.18 cannot cancel
    /// one query, so the query runs to its end and its answer is dropped.
    func cancel() {
        let completion = phase.withLock { phase -> Completion? in
            switch phase {
            case .new:
                phase = .cancelledEarly
                return nil
            case .waiting(let completion):
                phase = .finished
                return completion
            case .cancelledEarly, .finished:
                return nil
            }
        }
        completion?(.failure(.cancelledByCaller))
    }

    private func take() -> Completion? {
        phase.withLock { phase in
            guard case .waiting(let completion) = phase else { return nil }
            phase = .finished
            return completion
        }
    }
}
