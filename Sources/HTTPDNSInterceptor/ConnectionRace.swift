import HTTPDNSCore
import HTTPDNSSynchronization
import NIOCore
import NIOPosix

/// Happy Eyeballs (RFC 8305) for the interceptor: which of an answer's addresses to send a request to.
///
/// AsyncHTTPClient connects to the one address its `dnsOverride` names, without racing, and gives no sign that a
/// connection is made before the request goes out. So the race is run first, with TCP connections of its own: the
/// addresses are tried in RFC 8305's order (the families alternating, the configured family first), a new attempt
/// starting every connection attempt delay (250 ms) or as soon as one fails, until one connects. Its connection is
/// closed at once, and the request is then sent to that address. A request is never sent twice: the race sends
/// nothing.
///
/// What it costs when every address works: one more TCP handshake to the winner, before the first request to a host.
/// Once a request to an address has succeeded, that address is **warm** for as long as AsyncHTTPClient keeps an idle
/// connection (``WarmAddresses``), and later requests go to it without a race.
struct ConnectionRace: Sendable {
    let eventLoopGroup: any EventLoopGroup
    let attemptDelay: Duration
    let connectTimeout: Duration

    enum Outcome: Sendable, Equatable {
        /// The address at this index connected first.
        case connected(Int)
        /// None did: why each failed, in the order they were tried.
        case failed([String])
    }

    /// RFC 8305 §4's order: the families alternate, starting with the family of the first address.
    static func interleave(_ addresses: [IPAddress]) -> [IPAddress] {
        // One family (the common case, and every one-address answer): nothing to interleave, nothing allocated.
        guard let first = addresses.first, addresses.contains(where: { $0.family != first.family }) else { return addresses }
        let firstFamily = addresses.filter { $0.family == first.family }
        let other = addresses.filter { $0.family != first.family }
        var ordered: [IPAddress] = []
        ordered.reserveCapacity(addresses.count)
        for index in 0..<max(firstFamily.count, other.count) {
            if index < firstFamily.count { ordered.append(firstFamily[index]) }
            if index < other.count { ordered.append(other[index]) }
        }
        return ordered
    }

    private enum Event: Sendable {
        case attempt(index: Int, failure: String?)
        case delayElapsed(generation: Int)
    }

    /// Races connections to `addresses`, in the order given, to `port`.
    func run(_ addresses: [IPAddress], port: Int) async -> Outcome {
        await withTaskGroup(of: Event.self, returning: Outcome.self) { group in
            var next = 0
            var running = 0
            var generation = 0
            var failures: [String] = []
            var startAnother = true
            while true {
                // Cancelled (the caller's task, or the request's deadline): no attempt more, and none of the
                // running ones is waited for (each returns at once, closing its connection).
                if Task.isCancelled {
                    group.cancelAll()
                    return .failed(failures + ["cancelled"])
                }
                if startAnother, next < addresses.count {
                    let (index, address) = (next, addresses[next])
                    next += 1
                    running += 1
                    generation += 1
                    _ = group.addTaskUnlessCancelled { .attempt(index: index, failure: await probe(address, port: port)) }
                    if next < addresses.count {
                        let (delay, current) = (attemptDelay, generation)
                        _ = group.addTaskUnlessCancelled {
                            try? await Task.sleep(for: delay)
                            return .delayElapsed(generation: current)
                        }
                    }
                }
                startAnother = false
                guard let event = await group.next() else { return .failed(failures) }
                switch event {
                case .attempt(let index, nil):
                    group.cancelAll()
                    return .connected(index)
                case .attempt(let index, let failure?):
                    running -= 1
                    failures.append("\(addresses[index]): \(failure)")
                    // A failure starts the next attempt at once (RFC 8305 §5).
                    startAnother = true
                    if next >= addresses.count, running == 0 {
                        group.cancelAll()
                        return .failed(failures)
                    }
                case .delayElapsed(let elapsed):
                    // Only the delay of the latest attempt starts another: one started since by a failure has its own.
                    startAnother = elapsed == generation
                }
            }
        }
    }

    /// Connects to one address and closes the connection at once. Nil when it connected; else why not. Returns as
    /// soon as the task is cancelled, and closes the channel then, which ends a connect still in progress (no
    /// half-open socket is left to wait out the connect timeout).
    private func probe(_ address: IPAddress, port: Int) async -> String? {
        guard !Task.isCancelled else { return "cancelled" }
        let target: SocketAddress
        do {
            target = try SocketAddress(ipAddress: address.description, port: port)
        } catch {
            return "\(error)"
        }
        // Checked once, when the interceptor was made: its event loop group is one NIO's bootstraps take.
        guard let bootstrap = ClientBootstrap(validatingGroup: eventLoopGroup) else { return "the event loop group cannot make connections" }
        let resume = ResumeOnce()
        let connecting = bootstrap
            .connectTimeout(.nanoseconds(connectTimeout.clampedNanoseconds))
            .channelInitializer { channel in
                resume.hold(channel)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .connect(to: target)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                resume.set(continuation)
                connecting.whenComplete { result in
                    switch result {
                    case .success(let channel):
                        channel.close(promise: nil)
                        resume.resume(nil)
                    case .failure(let error):
                        resume.resume("\(error)")
                    }
                }
            }
        } onCancel: {
            resume.resume("cancelled")
            resume.closeChannel()
        }
    }
}

/// A continuation resumed once, by whichever comes first: the connection's outcome or the task's cancellation
/// (which may come before the continuation is set).
private final class ResumeOnce: Sendable {
    private struct State {
        var continuation: CheckedContinuation<String?, Never>?
        var result: String??
        var channel: (any Channel)?
        var closed = false
    }

    private let state = Mutex(State())

    /// The attempt's channel, closed by ``closeChannel()`` (at once, if that came first).
    func hold(_ channel: any Channel) {
        let closeNow = state.withLock { state in
            state.channel = channel
            return state.closed
        }
        if closeNow { channel.close(promise: nil) }
    }

    /// Closes the attempt's channel, ending a connect in progress.
    func closeChannel() {
        let channel = state.withLock { state -> (any Channel)? in
            state.closed = true
            return state.channel
        }
        channel?.close(promise: nil)
    }

    func set(_ continuation: CheckedContinuation<String?, Never>) {
        let early = state.withLock { state -> String?? in
            guard let result = state.result else {
                state.continuation = continuation
                return nil
            }
            return .some(result)
        }
        if let early { continuation.resume(returning: early) }
    }

    func resume(_ value: String?) {
        let continuation = state.withLock { state -> CheckedContinuation<String?, Never>? in
            guard state.result == nil else { return nil }
            state.result = .some(value)
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: value)
    }
}

/// Per host, the address a request last succeeded on, for as long as AsyncHTTPClient keeps an idle connection to it:
/// the next request goes there without a race. Bounded: past `limit` hosts, the oldest is forgotten.
final class WarmAddresses: Sendable {
    private struct Entry {
        var address: IPAddress
        var until: NIODeadline
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let lifetime: TimeAmount
    private let limit: Int

    init(lifetime: TimeAmount, limit: Int) {
        self.lifetime = lifetime
        self.limit = limit
    }

    /// The warm address of `host`, if it is still warm and among `addresses`.
    func address(of host: String, among addresses: [IPAddress]) -> IPAddress? {
        let now = NIODeadline.now()
        return entries.withLock { entries in
            guard let entry = entries[host] else { return nil }
            guard entry.until > now else {
                entries[host] = nil
                return nil
            }
            return addresses.contains(entry.address) ? entry.address : nil
        }
    }

    func record(_ address: IPAddress, for host: String) {
        let until = NIODeadline.now() + lifetime
        entries.withLock { entries in
            if entries[host] == nil, entries.count >= limit, let oldest = entries.min(by: { $0.value.until < $1.value.until })?.key {
                entries[oldest] = nil
            }
            entries[host] = Entry(address: address, until: until)
        }
    }

    /// Forgets `host`'s warm address when it is `address` (a request to it failed to connect).
    func forget(_ address: IPAddress, for host: String) {
        entries.withLock { entries in
            if entries[host]?.address == address { entries[host] = nil }
        }
    }
}
