import HTTPDNSCore
import Logging

/// Resolves names through c-ares against chosen DNS servers (or the system's resolver configuration).
///
/// One c-ares channel runs on a thread of its own (see `CAresEventLoop`); lookups from any task cross to it
/// and their answers come back to the awaiting caller. A and AAAA are asked in one `ares_getaddrinfo` call, and
/// the TTL of an answer is the smallest along its CNAME chain and its records.
///
/// Call ``shutdown()`` when done: it ends the thread and closes every socket the channel opened.
public final class CAresSource: ResolutionSource, MessageRelaying {
    /// How to reach the DNS servers.
    public struct Configuration: Sendable, Hashable {
        /// The transport to the DNS servers.
        public struct Transport: Sendable, Hashable, CustomStringConvertible {
            private enum Base: Sendable, Hashable { case udp, tcp }
            private let base: Base
            /// UDP, retried over TCP when an answer comes back truncated. The default.
            public static let udp = Transport(base: .udp)
            /// TCP only.
            public static let tcp = Transport(base: .tcp)

            var usesTCP: Bool { base == .tcp }

            public var description: String { base == .tcp ? "tcp" : "udp" }
        }

        /// The servers to ask, in order. Empty (the default) uses the system's resolver configuration
        /// (`/etc/resolv.conf`).
        public var servers: [DNSServerAddress] = []
        /// UDP (default) or TCP.
        public var transport: Transport = .udp
        /// How long the first try waits for an answer, in whole milliseconds (c-ares's unit; a fraction is
        /// dropped); c-ares doubles it on each round through the servers. Default 1,000 ms.
        public var timeout: Duration = .milliseconds(1000)
        /// How many times each server is tried. Default 2.
        public var tries: Int = 2
        /// The name used in stats, logs and metric dimensions. Default `cares`.
        public var name: String = "cares"

        public init(servers: [DNSServerAddress] = [], transport: Transport = .udp) {
            self.servers = servers
            self.transport = transport
        }

        /// Checks the timeout and tries.
        /// - Throws: `ConfigurationError` naming the first setting that cannot work.
        public func validate() throws(ConfigurationError) {
            guard timeout >= .milliseconds(1) else {
                throw ConfigurationError(.outOfRange, key: "timeout", reason: "must be at least 1 ms, not \(timeout)")
            }
            guard tries > 0 else {
                throw ConfigurationError(.outOfRange, key: "tries", reason: "must be at least 1, not \(tries)")
            }
            guard !name.isEmpty else {
                throw ConfigurationError(key: "name", reason: "must not be empty: it names the source in stats, logs and metrics")
            }
        }

        /// ``timeout`` in c-ares's whole milliseconds.
        var timeoutMilliseconds: Int32 { Int32(clamping: timeout.clampedMilliseconds) }
    }

    public let configuration: Configuration
    public var name: String { configuration.name }
    public var upstreamDescription: String { "\(configuration.name) via \(serversDescription)" }

    let loop: CAresEventLoop
    private let serversDescription: String

    /// Starts the channel and its thread.
    /// - Throws: `ConfigurationError` when `configuration` does not pass ``Configuration/validate()``;
    ///   `ResolutionError` with code `ResolutionError/Code/internalError` when c-ares cannot start (for example
    ///   an unreadable `/etc/resolv.conf`).
    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "httpdns.cares")) throws {
        try configuration.validate()
        self.configuration = configuration
        self.serversDescription =
            configuration.servers.isEmpty
            ? "the system resolvers (/etc/resolv.conf)"
            : configuration.servers.map(\.description).joined(separator: ", ")
        self.loop = try CAresEventLoop(configuration: configuration, logger: logger)
    }

    public func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        guard !families.isEmpty else { throw ResolutionError.noFamilies(host) }
        let outcome = try await loop.getAddressInfo(host.fullyQualified, families: families)
        return try answer(outcome, host: host, families: families).get()
    }

    /// Starts the lookup without a task: the completion runs on the c-ares thread, so a cache filling itself
    /// from here costs no task creation or extra hop per query.
    public func startQuery(
        _ host: HostName,
        families: AddressFamilies,
        completion: @escaping @Sendable (Result<SourceAnswer, ResolutionError>) -> Void
    ) {
        guard !families.isEmpty else { return completion(.failure(.noFamilies(host))) }
        loop.submit(LookupRequest(name: host.fullyQualified, families: families)) { [self] outcome in
            completion(answer(outcome, host: host, families: families))
        }
    }

    private func answer(_ outcome: Result<CAresAddresses, CAresStatus>, host: HostName, families: AddressFamilies) -> Result<
        SourceAnswer, ResolutionError
    > {
        switch outcome {
        case .success(let addresses):
            return .success(Self.answer(addresses, families: families))
        case .failure(let status):
            if let negative = CAresStatus.negativeAnswer(status) {
                return .success(.negative(negative, families: families))
            }
            return .failure(
                CAresStatus.error(status, host: host, families: families, servers: serversDescription, transport: configuration.transport)
            )
        }
    }

    /// Sends `query`, a DNS message of any type, to the servers as it is, and returns the answer as the server
    /// sent it: every section, CNAME chains, the authority section's SOA of a negative answer. For resolvers that
    /// relay what they do not parse (DoH for types other than A and AAAA).
    ///
    /// c-ares gives the query an ID of its own: the answer carries that ID, not the one in `query`; a relay sets
    /// its client's back. An answer with NXDOMAIN or no data is an answer, returned like any other; with one server,
    /// so is SERVFAIL, REFUSED or NOTIMP, whose answers c-ares would otherwise drop to try the next.
    /// - Throws: `ResolutionError`: `timeout`, `serverUnreachable`, `serverFailure` or `refused` (several
    ///   servers, all failing), `malformedAnswer`, `badName` (a query c-ares refuses: shorter than a header, or
    ///   64 KiB or more), `shutdown`; `CancellationError` when the task is cancelled first.
    public func send(_ query: [UInt8]) async throws -> [UInt8] {
        switch try await loop.send(query) {
        case .success(let answer):
            return answer
        case .failure(let status):
            throw CAresStatus.error(status, asking: "sending a query of \(query.count) bytes to \(serversDescription) over \(configuration.transport)")
        }
    }

    /// Ends the event thread; lookups still in flight fail with `ResolutionError/Code/shutdown`. Idempotent.
    public func shutdown() async {
        await loop.shutdown()
    }

    // A source dropped without shutdown() still stops its thread and closes its sockets, just without waiting.
    deinit {
        loop.stopDetached()
    }

    private static func answer(_ result: CAresAddresses, families: AddressFamilies) -> SourceAnswer {
        var answer = SourceAnswer()
        if families.contains(.ipv4) {
            answer.ipv4 = result.ipv4.isEmpty ? .negative(.noData, ttlSeconds: nil) : .addresses(result.ipv4, ttlSeconds: result.ipv4TTL)
        }
        if families.contains(.ipv6) {
            answer.ipv6 = result.ipv6.isEmpty ? .negative(.noData, ttlSeconds: nil) : .addresses(result.ipv6, ttlSeconds: result.ipv6TTL)
        }
        return answer
    }
}
