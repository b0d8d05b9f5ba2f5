import HTTPDNSCore
import HTTPDNSSynchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A DNS server on loopback that answers, or misbehaves, as a test asks.
///
/// It listens on UDP and TCP on one ephemeral port of 127.0.0.1 (or ::1) and serves both from a single thread
/// waiting in `poll(2)`, so what c-ares sees is real sockets and real timing, not a mock. What it does with a
/// query is chosen per query name (``Configuration/behaviors``), falling back to ``Configuration/behavior``.
///
/// Always ``stop()`` it (or use ``withFaultyDNSServer(_:_:)``): that closes every socket and joins the thread.
final class FaultyDNSServer: Sendable {
    /// What the server does with a query.
    enum Behavior: Sendable, Hashable {
        /// Answers with the name's ``Records``.
        case answer
        /// Reads the query and never answers.
        case silent
        /// Answers with random bytes. With `keepID` the first two bytes are the query's ID, so c-ares cannot
        /// drop the packet on the ID alone and has to look at the rest.
        case garbage(keepID: Bool)
        /// Over UDP: an empty answer with the TC bit set. Over TCP: the full answer.
        case truncateOverUDP
        /// An answer whose ID is not the query's; then, if `thenAnswer`, the right answer.
        case mismatchedID(thenAnswer: Bool)
        /// An answer to another name (with the query's ID); then, if `thenAnswer`, the right answer.
        case mismatchedQuestion(thenAnswer: Bool)
        /// RCODE 5.
        case refused
        /// RCODE 2.
        case serverFailure
        /// RCODE 3, NXDOMAIN.
        case nameNotFound
        /// NOERROR with an empty answer section.
        case noData
        /// A well-formed header and question, and an answer record cut short.
        case malformedRecords
    }

    /// The records the server holds for one name.
    struct Records: Sendable, Hashable {
        struct Alias: Sendable, Hashable {
            var target: String
            var ttl: UInt32
        }

        struct Entry<Address: Sendable & Hashable>: Sendable, Hashable {
            var address: Address
            var ttl: UInt32
        }

        /// A CNAME to `target`; the addresses are then served under the target's name.
        var alias: Alias?
        var ipv4: [Entry<IPv4Address>] = []
        var ipv6: [Entry<IPv6Address>] = []

        static let standard = Records(
            ipv4: [Entry(address: IPv4Address(0xC000_0201), ttl: 300)],  // 192.0.2.1
            ipv6: [Entry(address: IPv6Address(high: 0x2001_0DB8_0000_0000, low: 1), ttl: 300)]  // 2001:db8::1
        )
    }

    enum Loopback: Sendable, Hashable {
        case ipv4
        case ipv6

        var ip: IPAddress {
            switch self {
            case .ipv4: .v4(IPv4Address(0x7F00_0001))
            case .ipv6: .v6(IPv6Address(high: 0, low: 1))
            }
        }
    }

    struct Configuration: Sendable {
        var loopback = Loopback.ipv4
        /// For names without an entry in ``behaviors``.
        var behavior = Behavior.answer
        /// By lower-case name without the trailing dot.
        var behaviors: [String: Behavior] = [:]
        /// By lower-case name without the trailing dot; names without an entry get ``defaultRecords``.
        var records: [String: Records] = [:]
        var defaultRecords = Records.standard
    }

    enum Transport: Sendable, Hashable { case udp, tcp }

    struct ReceivedQuery: Sendable, Hashable {
        var transport: Transport
        var name: String
        var type: UInt16
    }

    /// What the server has seen so far.
    struct Activity: Sendable {
        /// Every query that parsed, in arrival order.
        var queries: [ReceivedQuery] = []
        /// TCP connections accepted and not yet closed.
        var openTCPConnections = 0

        var udpQueries: Int { queries.count { $0.transport == .udp } }
        var tcpQueries: Int { queries.count { $0.transport == .tcp } }
    }

    /// The address to give c-ares: `127.0.0.1:PORT` or `[::1]:PORT`.
    let address: DNSServerAddress
    var port: UInt16 { address.port }

    private let configuration: Configuration
    private let udpSocket: Int32
    private let tcpSocket: Int32
    /// Written by ``stop()`` to end the thread's `poll`.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let thread = Mutex<pthread_t?>(nil)
    private let state = Mutex(State())

    private struct Waiter {
        var predicate: @Sendable (Activity) -> Bool
        var continuation: CheckedContinuation<Activity, Never>
    }

    private struct State {
        var activity = Activity()
        var waiters: [Int: Waiter] = [:]
        var cancelledWaiters: Set<Int> = []
        var nextWaiter = 0
        var stopped = false
    }

    struct SocketError: Error, CustomStringConvertible {
        var description: String
        init(_ what: String, _ code: Int32 = errno) {
            description = "\(what): \(String(cString: strerror(code)))"
        }
    }

    /// Whether this machine can bind `[::1]` (containers often run without IPv6).
    static let canBindIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return withSocketAddress(.ipv6, port: 0) { bind(fd, $0, $1) } == 0
    }()

    init(_ configuration: Configuration = Configuration()) throws {
        self.configuration = configuration
        let (udp, tcp, port) = try Self.bindSockets(configuration.loopback)
        var pipeFDs: [Int32] = [0, 0]
        // pipe2 and accept4 need _GNU_SOURCE, which Glibc's module does not define; nothing here forks.
        guard pipe(&pipeFDs) == 0 else {
            let error = SocketError("pipe")
            close(udp)
            close(tcp)
            throw error
        }
        self.udpSocket = udp
        self.tcpSocket = tcp
        self.wakeRead = pipeFDs[0]
        self.wakeWrite = pipeFDs[1]
        self.address = DNSServerAddress(ip: configuration.loopback.ip, port: port)

        var handle = pthread_t()
        let retained = Unmanaged.passRetained(self)
        let created = pthread_create(
            &handle,
            nil,
            { argument in
                let server = Unmanaged<FaultyDNSServer>.fromOpaque(argument!).takeRetainedValue()
                server.run()
                return nil
            },
            retained.toOpaque()
        )
        guard created == 0 else {
            retained.release()
            for fd in [udp, tcp, pipeFDs[0], pipeFDs[1]] { close(fd) }
            throw SocketError("pthread_create", created)
        }
        thread.withLock { $0 = handle }
    }

    /// Closes every socket and joins the thread; waiters are resumed with what was seen. Idempotent.
    func stop() {
        guard
            let handle = thread.withLock({ thread in
                defer { thread = nil }; return thread
            })
        else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        pthread_join(handle, nil)
        for fd in [udpSocket, tcpSocket, wakeRead, wakeWrite] { close(fd) }
        let waiters = state.withLock { state in
            state.stopped = true
            defer { state.waiters = [:] }
            return (state.waiters.values.map(\.continuation), state.activity)
        }
        for continuation in waiters.0 { continuation.resume(returning: waiters.1) }
    }

    /// What the server has seen so far.
    var activity: Activity { state.withLock { $0.activity } }

    /// Waits until what the server has seen satisfies `predicate` (or the server stops, or the task is
    /// cancelled), and returns it.
    @discardableResult
    func wait(until predicate: @escaping @Sendable (Activity) -> Bool) async -> Activity {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Activity? in
                    if state.stopped || state.cancelledWaiters.remove(id) != nil || predicate(state.activity) {
                        return state.activity
                    }
                    state.waiters[id] = Waiter(predicate: predicate, continuation: continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let found = state.withLock { state -> (CheckedContinuation<Activity, Never>, Activity)? in
                guard let waiter = state.waiters.removeValue(forKey: id) else {
                    state.cancelledWaiters.insert(id)
                    return nil
                }
                return (waiter.continuation, state.activity)
            }
            if let (continuation, activity) = found { continuation.resume(returning: activity) }
        }
    }

    /// Waits for at least `count` queries.
    @discardableResult
    func waitForQueries(_ count: Int) async -> Activity {
        await wait { $0.queries.count >= count }
    }

    // MARK: - Sockets

    private static func withSocketAddress<R>(_ loopback: Loopback, port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch loopback {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = IPv6Address(high: 0, low: 1).in6Addr
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// Binds UDP to an ephemeral port, then TCP to the same number, retrying with another port when some TCP
    /// socket already holds it.
    private static func bindSockets(_ loopback: Loopback) throws -> (udp: Int32, tcp: Int32, port: UInt16) {
        let family = loopback == .ipv4 ? AF_INET : AF_INET6
        let cloexec = Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        for _ in 0..<50 {
            let udp = socket(family, Int32(SOCK_DGRAM.rawValue) | cloexec, 0)
            guard udp >= 0 else { throw SocketError("socket(UDP)") }
            // Room for a burst of hundreds of queries while the thread is busy answering (capped by rmem_max).
            var receiveBuffer: Int32 = 4 << 20
            setsockopt(udp, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
            guard withSocketAddress(loopback, port: 0, { bind(udp, $0, $1) }) == 0 else {
                let error = SocketError("bind(UDP)")
                close(udp)
                throw error
            }
            var bound = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(udp, $0, &length) }
            }
            guard named == 0 else {
                let error = SocketError("getsockname")
                close(udp)
                throw error
            }
            // sin_port and sin6_port sit at the same offset, right after the family.
            let port = withUnsafeBytes(of: &bound) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }

            let tcp = socket(family, Int32(SOCK_STREAM.rawValue) | cloexec, 0)
            guard tcp >= 0 else {
                let error = SocketError("socket(TCP)")
                close(udp)
                throw error
            }
            var on: Int32 = 1
            setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            if withSocketAddress(loopback, port: port, { bind(tcp, $0, $1) }) == 0, listen(tcp, 512) == 0 {
                return (udp, tcp, port)
            }
            let code = errno
            close(udp)
            close(tcp)
            guard code == EADDRINUSE else { throw SocketError("bind(TCP)", code) }
        }
        throw SocketError("no port free for both UDP and TCP", EADDRINUSE)
    }

    // MARK: - On the server thread

    private func run() {
        var connections: [Int32: [UInt8]] = [:]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var pollSet: [pollfd] = []
        serving: while true {
            pollSet = [
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                pollfd(fd: udpSocket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: tcpSocket, events: Int16(POLLIN), revents: 0),
            ]
            for fd in connections.keys { pollSet.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            guard poll(&pollSet, nfds_t(pollSet.count), -1) >= 0 else {
                if errno == EINTR { continue }
                fatalError("\(SocketError("poll in FaultyDNSServer"))")
            }
            if pollSet[0].revents != 0 { break serving }
            if pollSet[1].revents != 0 { serveUDP(&buffer) }
            if pollSet[2].revents != 0 {
                while true {
                    let connection = accept(tcpSocket, nil, nil)
                    guard connection >= 0 else { break }
                    connections[connection] = []
                    update { $0.openTCPConnections += 1 }
                }
            }
            for entry in pollSet.dropFirst(3) where entry.revents != 0 {
                let count = recv(entry.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count < 0, errno == EAGAIN || errno == EINTR { continue }
                guard count > 0 else {
                    close(entry.fd)
                    connections.removeValue(forKey: entry.fd)
                    update { $0.openTCPConnections -= 1 }
                    continue
                }
                connections[entry.fd, default: []] += buffer[0..<count]
                serveTCP(entry.fd, pending: &connections[entry.fd, default: []])
            }
        }
        for fd in connections.keys { close(fd) }
        if !connections.isEmpty {
            update { $0.openTCPConnections -= connections.count }
        }
    }

    private func serveUDP(_ buffer: inout [UInt8]) {
        while true {
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(udpSocket, &buffer, buffer.count, Int32(MSG_DONTWAIT), $0, &peerLength)
                }
            }
            guard count >= 0 else { return }
            for reply in replies(to: Array(buffer[0..<count]), over: .udp) {
                _ = withUnsafePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(udpSocket, reply, reply.count, 0, $0, peerLength) }
                }
            }
        }
    }

    /// Answers every complete length-prefixed message in `pending` and leaves the rest there.
    private func serveTCP(_ fd: Int32, pending: inout [UInt8]) {
        while pending.count >= 2 {
            let length = Int(pending[0]) << 8 | Int(pending[1])
            guard pending.count >= 2 + length else { return }
            let message = Array(pending[2..<2 + length])
            pending.removeFirst(2 + length)
            for reply in replies(to: message, over: .tcp) {
                let framed = [UInt8(reply.count >> 8), UInt8(truncatingIfNeeded: reply.count)] + reply
                var sent = 0
                while sent < framed.count {
                    // Accepted sockets block: an answer is small, and c-ares reads what it asked for.
                    let count = framed[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { return }
                    sent += count
                }
            }
        }
    }

    private func replies(to message: [UInt8], over transport: Transport) -> [[UInt8]] {
        guard let query = DNSWire.parseQuery(message) else { return [] }
        update { $0.queries.append(ReceivedQuery(transport: transport, name: query.name, type: query.type)) }
        switch configuration.behaviors[query.name] ?? configuration.behavior {
        case .answer:
            return [answer(query)]
        case .silent:
            return []
        case .garbage(let keepID):
            var bytes = (0..<Int.random(in: 12...200)).map { _ in UInt8.random(in: .min ... .max) }
            if keepID {
                bytes[0] = UInt8(query.id >> 8)
                bytes[1] = UInt8(truncatingIfNeeded: query.id)
            } else if bytes[0] == UInt8(query.id >> 8), bytes[1] == UInt8(truncatingIfNeeded: query.id) {
                bytes[0] ^= 0xFF  // random, but never the query's ID by a 1-in-65,536 fluke
            }
            return [bytes]
        case .truncateOverUDP:
            return [transport == .udp ? DNSWire.response(to: query, truncated: true) : answer(query)]
        case .mismatchedID(let thenAnswer):
            let wrong = DNSWire.response(to: query, id: query.id ^ 0x8000, answers: records(for: query))
            return thenAnswer ? [wrong, answer(query)] : [wrong]
        case .mismatchedQuestion(let thenAnswer):
            let other = "wrong." + query.name
            var otherQuery = query
            otherQuery.name = other
            let wrong = DNSWire.response(to: query, questionName: other, answers: records(for: otherQuery, as: query.name))
            return thenAnswer ? [wrong, answer(query)] : [wrong]
        case .refused:
            return [DNSWire.response(to: query, code: .refused)]
        case .serverFailure:
            return [DNSWire.response(to: query, code: .serverFailure)]
        case .nameNotFound:
            return [DNSWire.response(to: query, code: .nameError)]
        case .noData:
            return [DNSWire.response(to: query)]
        case .malformedRecords:
            var bytes = answer(query)
            // The last record's data now runs past the end of the message.
            bytes.removeLast(min(3, bytes.count - DNSWire.headerLength))
            return [bytes]
        }
    }

    private func answer(_ query: DNSWire.Query) -> [UInt8] {
        DNSWire.response(to: query, answers: records(for: query))
    }

    /// The answer records for `query`, under the query's name (or `recordsOf`'s records under the query's).
    private func records(for query: DNSWire.Query, as recordsOf: String? = nil) -> [DNSWire.Record] {
        let held = configuration.records[recordsOf ?? query.name] ?? configuration.defaultRecords
        var answers: [DNSWire.Record] = []
        var owner = query.name
        if let alias = held.alias {
            answers.append(.cname(owner, target: alias.target, ttl: alias.ttl))
            owner = alias.target
        }
        switch DNSWire.RecordType(rawValue: query.type) {
        case .a: answers += held.ipv4.map { .a(owner, $0.address, ttl: $0.ttl) }
        case .aaaa: answers += held.ipv6.map { .aaaa(owner, $0.address, ttl: $0.ttl) }
        default: break
        }
        return answers
    }

    /// Changes the activity and resumes the waiters it satisfies.
    private func update(_ change: (inout Activity) -> Void) {
        let satisfied = state.withLock { state -> [(CheckedContinuation<Activity, Never>, Activity)] in
            change(&state.activity)
            let activity = state.activity
            var satisfied: [(CheckedContinuation<Activity, Never>, Activity)] = []
            for (id, waiter) in state.waiters where waiter.predicate(activity) {
                state.waiters.removeValue(forKey: id)
                satisfied.append((waiter.continuation, activity))
            }
            return satisfied
        }
        for (continuation, activity) in satisfied { continuation.resume(returning: activity) }
    }
}

/// Runs `body` with a started server, and stops the server however `body` ends.
func withFaultyDNSServer<R>(
    _ configuration: FaultyDNSServer.Configuration = .init(),
    _ body: (FaultyDNSServer) async throws -> R
) async throws -> R {
    let server = try FaultyDNSServer(configuration)
    defer { server.stop() }
    return try await body(server)
}
