#if GRPC
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPDNSCore
import HTTPDNSGRPC
import HTTPDNSSynchronization
import HTTPDNSTesting
import NIOCore
import NIOTLS

/// What the probe service saw of a call: the `:authority`, the address it was reached on, the SNI of the connection
/// and the message.
struct Report: Sendable, Equatable, CustomStringConvertible {
    let authority: String
    let local: String
    let sni: String
    let message: String

    /// `authority=… local=… sni=… message=…`, as the service writes it.
    init?(_ text: String) {
        var fields: [String: String] = [:]
        for field in text.split(separator: " ") {
            guard let equals = field.firstIndex(of: "=") else { return nil }
            fields[String(field[..<equals])] = String(field[field.index(after: equals)...])
        }
        guard let authority = fields["authority"], let local = fields["local"], let sni = fields["sni"], let message = fields["message"]
        else { return nil }
        self.authority = authority
        self.local = local
        self.sni = sni
        self.message = message
    }

    var description: String { "authority=\(authority) local=\(local) sni=\(sni) message=\(message)" }
}

/// The SNI of each connection a server accepted, by the client's port (read before TLS, by NIO's `SNIHandler`).
final class SNIRecorder: Sendable {
    private let names = Mutex<[Int: String]>([:])

    func record(port: Int?, _ result: SNIResult) {
        guard let port else { return }
        let name: String
        switch result {
        case .hostname(let hostname): name = hostname
        case .fallback: name = "-"
        }
        names.withLock { $0[port] = name }
    }

    /// The SNI of the connection from `remotePeer` (`ipv4:127.0.0.1:PORT`), `?` when none was recorded.
    func name(for remotePeer: String) -> String {
        guard let port = remotePeer.split(separator: ":").last.flatMap({ Int($0) }) else { return "?" }
        return names.withLock { $0[port] } ?? "?"
    }

    /// The server's transport config: every accepted connection's SNI recorded before TLS sees it.
    func config() -> HTTP2ServerTransport.Posix.Config {
        .defaults { config in
            config.channelDebuggingCallbacks.onAcceptTCPConnection = { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let port = channel.remoteAddress?.port
                    let sni = ByteToMessageHandler(
                        SNIHandler { result in
                            self.record(port: port, result)
                            return channel.eventLoop.makeSucceededVoidFuture()
                        }
                    )
                    try channel.pipeline.syncOperations.addHandler(sni, position: .first)
                }
            }
        }
    }
}

/// A service written by hand (no generated code): `probe.Probe/Who` answers each message it gets with a `Report`,
/// for unary and bidirectional streaming calls alike, and counts the calls it handled.
struct ProbeService: RegistrableRPCService {
    static let who = MethodDescriptor(fullyQualifiedService: "probe.Probe", method: "Who")
    /// The catalog example's method: `echo.Echo/Get`, answered the same way.
    static let echo = MethodDescriptor(fullyQualifiedService: "echo.Echo", method: "Get")

    let sni: SNIRecorder
    let handled = Counter()

    final class Counter: Sendable {
        private let count = Mutex(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        for method in [Self.who, Self.echo] {
            router.registerHandler(forMethod: method, deserializer: UTF8Coder(), serializer: UTF8Coder()) { [sni, handled] request, context in
                handled.increment()
                let authority = request.metadata[stringValues: ":authority"].first(where: { _ in true }) ?? "-"
                // `ipv4:127.0.0.61:PORT` → `127.0.0.61`.
                let local = context.localPeer.split(separator: ":").dropFirst().first.map(String.init) ?? context.localPeer
                let name = sni.name(for: context.remotePeer)
                return StreamingServerResponse { writer in
                    for try await message in request.messages {
                        try await writer.write("authority=\(authority) local=\(local) sni=\(name) message=\(message)")
                    }
                    return [:]
                }
            }
        }
    }
}

/// gRPC servers over TLS, one per address, all on one port, with a certificate made at test time.
final class GRPCStage: Sendable {
    /// The true addresses of grpc.test.
    static let addresses = ["127.0.0.61", "127.0.0.62"]
    static let host = try! HostName("grpc.test")

    let port: Int
    let certificate: String
    let service: ProbeService
    private let servers: Mutex<[String: (server: GRPCServer<HTTP2ServerTransport.Posix>, task: Task<Void, any Error>)]>

    private init(
        port: Int,
        certificate: String,
        service: ProbeService,
        servers: [String: (GRPCServer<HTTP2ServerTransport.Posix>, Task<Void, any Error>)]
    ) {
        self.port = port
        self.certificate = certificate
        self.service = service
        self.servers = Mutex(servers.mapValues { (server: $0.0, task: $0.1) })
    }

    /// Runs `body` with a server on each of `addresses` (one port for all), presenting a certificate for
    /// `subjectAltName`; every server still running when `body` ends is stopped.
    static func with(
        subjectAltName: String = "DNS:grpc.test",
        addresses: [String] = GRPCStage.addresses,
        _ body: (GRPCStage) async throws -> Void
    ) async throws {
        try await TestCertificate.with(subjectAltName: subjectAltName) { certificate, key in
            let service = ProbeService(sni: SNIRecorder())
            var servers: [String: (GRPCServer<HTTP2ServerTransport.Posix>, Task<Void, any Error>)] = [:]
            var port = 0
            // The first server takes a free port, the others the same one on their addresses; should one of those
            // be taken there (another test's server, by chance), start again on another port, three times at most.
            for attempt in 1...3 {
                do {
                    port = 0
                    for address in addresses {
                        let transport = HTTP2ServerTransport.Posix(
                            address: .ipv4(host: address, port: port),
                            transportSecurity: .tls(
                                certificateChain: [.file(path: certificate, format: .pem)],
                                privateKey: .file(path: key, format: .pem)
                            ),
                            config: service.sni.config()
                        )
                        let server = GRPCServer(transport: transport, services: [service])
                        servers[address] = (server, Task { try await server.serve() })
                        guard let listening = try await transport.listeningAddress.ipv4 else {
                            throw StageError("\(address) is not listening on IPv4")
                        }
                        port = listening.port
                    }
                    break
                } catch {
                    for (server, task) in servers.values {
                        server.beginGracefulShutdown()
                        _ = await task.result
                    }
                    servers = [:]
                    if attempt == 3 { throw error }
                }
            }
            let stage = GRPCStage(port: port, certificate: certificate, service: service, servers: servers)
            let result: Result<Void, any Error>
            do {
                result = .success(try await body(stage))
            } catch {
                result = .failure(error)
            }
            for address in addresses { await stage.stop(address) }
            try result.get()
        }
    }

    /// Stops the server on `address` and returns once it has stopped: gracefully (a GOAWAY, then its connections
    /// closed), or at once (its task cancelled, its connections closed as they are), as a server that goes away does.
    func stop(_ address: String, gracefully: Bool = true) async {
        guard let (server, task) = servers.withLock({ $0.removeValue(forKey: address) }) else { return }
        if gracefully {
            server.beginGracefulShutdown()
        } else {
            task.cancel()
        }
        _ = await task.result
    }

    /// A service config that sends a probe call again when it fails as `unavailable`: a call made while the channel
    /// is still taking in a GOAWAY or a new answer can fail so ("no subchannel available": grpc-swift tries to open
    /// its stream a few times at once, not later), and a client of a service that moves retries it.
    static let retrying = ServiceConfig(
        methodConfig: [
            MethodConfig(
                names: [MethodConfig.Name(service: "probe.Probe")],
                executionPolicy: .retry(
                    RetryPolicy(
                        maxAttempts: 5,
                        initialBackoff: .milliseconds(20),
                        maxBackoff: .milliseconds(500),
                        backoffMultiplier: 2,
                        retryableStatusCodes: [.unavailable]
                    )
                )
            )
        ]
    )

    /// TLS that trusts the stage's certificate, verified in full.
    var tls: HTTP2ClientTransport.Posix.TransportSecurity.TLS {
        var tls = HTTP2ClientTransport.Posix.TransportSecurity.TLS.defaults
        tls.trustRoots = .certificates([.file(path: certificate, format: .pem)])
        return tls
    }
}

struct StageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension GRPCClient where Transport == HTTP2ClientTransport.Posix {
    /// A unary call to the probe service.
    func who(_ message: String = "unary", waitForReady: Bool = false) async throws -> Report {
        var options = CallOptions.defaults
        options.waitForReady = waitForReady
        options.timeout = .seconds(20)
        let text = try await unary(
            request: ClientRequest(message: message),
            descriptor: ProbeService.who,
            serializer: UTF8Coder(),
            deserializer: UTF8Coder(),
            options: options
        ) { response in try response.message }
        guard let report = Report(text) else { throw StageError("not a report: \(text)") }
        return report
    }

    /// A unary call made again while it fails as `unavailable` (each call with the service config's own retries and
    /// their backoff), until `limit` has passed: for a call made while the channel moves to another address. Any
    /// other error, or `unavailable` once the limit has passed, is thrown.
    func whoWhileUnavailable(for limit: Duration) async throws -> Report {
        let end = ContinuousClock.now + limit
        while true {
            do {
                return try await who(waitForReady: true)
            } catch let error as RPCError where error.code == .unavailable && ContinuousClock.now < end {
                // A pause of our own between calls: the retry policy's backoff is jittered, and can be next to none.
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// A bidirectional streaming call to the probe service: `messages` sent, one report back for each.
    func whoStreaming(_ messages: [String], waitForReady: Bool = false) async throws -> [Report] {
        var options = CallOptions.defaults
        options.waitForReady = waitForReady
        options.timeout = .seconds(20)
        let texts = try await bidirectionalStreaming(
            request: StreamingClientRequest(of: String.self) { writer in try await writer.write(contentsOf: messages) },
            descriptor: ProbeService.who,
            serializer: UTF8Coder(),
            deserializer: UTF8Coder(),
            options: options
        ) { response in
            var texts: [String] = []
            for try await text in response.messages { texts.append(text) }
            return texts
        }
        return try texts.map { text in
            guard let report = Report(text) else { throw StageError("not a report: \(text)") }
            return report
        }
    }
}

/// `error` and every error under it (grpc-swift's `RPCError` and `RuntimeError`, ours), outermost first.
func causes(of error: any Error) -> [any Error] {
    var chain: [any Error] = [error]
    var current: (any Error)? = error
    while let next = current.flatMap(cause(of:)), chain.count < 16 {
        chain.append(next)
        current = next
    }
    return chain
}

private func cause(of error: any Error) -> (any Error)? {
    switch error {
    case let error as RPCError: error.cause
    case let error as RuntimeError: error.cause
    case let error as HTTPDNSGRPCError: error.cause
    case let error as ResolutionError: error.cause
    default: nil
    }
}

/// A clock that moves only when told to, and says when something sleeps on it: for following the name resolver's
/// waits (TTLs, retries) without waiting for them.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct Waiter {
        let id: Int
        let count: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        /// How long each sleep asked for, in the order they started.
        var sleeps: [Duration] = []
        var waiters: [Waiter] = []
        var nextID = 0

        mutating func readyWaiters() -> [CheckedContinuation<Void, Never>] {
            var ready: [CheckedContinuation<Void, Never>] = []
            waiters.removeAll { waiter in
                guard sleeps.count >= waiter.count else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
    }

    private let state = Mutex(State())

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (now, ready, cancelled) = state.withLock { state in
                    state.sleeps.append(state.now.duration(to: deadline))
                    let ready = state.readyWaiters()
                    if deadline <= state.now || Task.isCancelled { return (true, ready, Task.isCancelled) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (false, ready, false)
                }
                for waiter in ready { waiter.resume() }
                if cancelled {
                    continuation.resume(throwing: CancellationError())
                } else if now {
                    continuation.resume()
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                state.sleepers.firstIndex { $0.id == id }.map { state.sleepers.remove(at: $0) }
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock on by `duration`, waking every sleep that is due.
    func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            var due: [Sleeper] = []
            state.sleepers.removeAll { sleeper in
                guard sleeper.deadline <= now else { return false }
                due.append(sleeper)
                return true
            }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Returns, once `count` sleeps in all have started, how long each asked for. Returns early (with fewer) when
    /// the waiting task is cancelled, as a test's time limit does.
    func sleeps(atLeast count: Int) async -> [Duration] {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    guard state.sleeps.count < count, !Task.isCancelled else { return true }
                    state.waiters.append(Waiter(id: id, count: count, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
            }
            waiter?.continuation.resume()
        }
        return state.withLock { $0.sleeps }
    }
}
#endif

#if GRPC
/// The client's TCP connections as they close, by the address they went to: a signal, from the transport's
/// `onCreateTCPConnection` callback (which `requireCertificateName(_:)` keeps, running it after its own check).
final class ConnectionWatch: Sendable {
    private struct State {
        var closed: [String: Int] = [:]
        var waiters: [(address: String, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// `config` with the watch attached.
    func attach(to config: HTTP2ClientTransport.Posix.Config = .defaults) -> HTTP2ClientTransport.Posix.Config {
        var config = config
        config.channelDebuggingCallbacks.onCreateTCPConnection = { [self] channel in
            channel.closeFuture.whenComplete { _ in
                // The remote address is known once connected, and kept after the close.
                guard let address = channel.remoteAddress?.ipAddress else { return }
                let ready = self.state.withLock { state in
                    state.closed[address, default: 0] += 1
                    var ready: [CheckedContinuation<Void, Never>] = []
                    state.waiters.removeAll { waiter in
                        guard waiter.address == address else { return false }
                        ready.append(waiter.continuation)
                        return true
                    }
                    return ready
                }
                for continuation in ready { continuation.resume() }
            }
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        return config
    }

    /// Returns once a connection to `address` has closed (at once if one has), or when the waiting task is
    /// cancelled, as a test's time limit does.
    func closed(_ address: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                guard state.closed[address, default: 0] == 0, !Task.isCancelled else { return true }
                state.waiters.append((address, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}
#endif
