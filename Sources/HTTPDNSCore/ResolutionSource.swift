/// Something that answers "what are the addresses of this name?" by asking upstream: c-ares, the system
/// resolver, an HTTPDNS service. Sources do not cache; ``ResolverCache`` does.
public protocol ResolutionSource: Sendable {
    /// A short, fixed name for logs, stats and metric dimensions (`cares`, `system`).
    var name: String { get }

    /// What the source asks, for error messages: `cares via 127.0.0.1:5353`. Defaults to ``name``.
    var upstreamDescription: String { get }

    /// Asks upstream for the addresses of `host` in `families`.
    ///
    /// Negative answers (NXDOMAIN, no data) are returned in the ``SourceAnswer``; failures to get an answer
    /// (timeouts, refusals, garbage) are thrown as ``ResolutionError``.
    func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer

    /// Starts the same query and calls `completion` exactly once, on any thread, when it ends.
    ///
    /// ``ResolverCache`` fills itself through this. The default runs ``query(_:families:)`` in a new task; a
    /// source with a callback-driven core (c-ares) implements it directly and saves a task per query.
    func startQuery(
        _ host: HostName,
        families: AddressFamilies,
        completion: @escaping @Sendable (Result<SourceAnswer, ResolutionError>) -> Void
    )

    /// The network the process is on has changed: forget what was learnt about the old one (which addresses
    /// failed, connections opened from the old address). ``HostResolver/networkChanged(concurrency:)`` calls it
    /// before it asks again. The default does nothing.
    func networkChanged() async

    /// Lets go of what the source holds (connections, threads, sockets); lookups after it fail with
    /// ``ResolutionError/Code/shutdown``. Idempotent. The ``HostResolver`` that owns the source calls it when it is shut
    /// down itself. The default does nothing: a source that holds nothing has nothing to let go.
    func shutdown() async
}

extension ResolutionSource {
    public var upstreamDescription: String { name }

    public func networkChanged() async {}

    public func shutdown() async {}

    public func startQuery(
        _ host: HostName,
        families: AddressFamilies,
        completion: @escaping @Sendable (Result<SourceAnswer, ResolutionError>) -> Void
    ) {
        completeInTask(completion) { try await self.query(host, families: families) }
    }

    /// Runs `lookUp` in a new task and hands its outcome to `completion`, any error as a ``ResolutionError``: what
    /// ``startQuery(_:families:completion:)`` does by default with ``query(_:families:)``, for a source whose own
    /// `startQuery` answers some queries without a task and hands the rest on.
    package func completeInTask(
        _ completion: @escaping @Sendable (Result<SourceAnswer, ResolutionError>) -> Void,
        _ lookUp: @escaping @Sendable () async throws -> SourceAnswer
    ) {
        Task {
            do {
                completion(.success(try await lookUp()))
            } catch let error as ResolutionError {
                completion(.failure(error))
            } catch {
                completion(.failure(ResolutionError(.internalError, "\(name) failed: \(error)")))
            }
        }
    }
}

/// What a source learnt about one name: an answer for each family asked.
public struct SourceAnswer: Sendable, Hashable {
    /// The answer for A, if A was asked.
    public var ipv4: FamilyAnswer<IPv4Address>?
    /// The answer for AAAA, if AAAA was asked.
    public var ipv6: FamilyAnswer<IPv6Address>?

    public init(ipv4: FamilyAnswer<IPv4Address>? = nil, ipv6: FamilyAnswer<IPv6Address>? = nil) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
    }

    /// The same negative answer for every family in `families`.
    public static func negative(_ kind: NegativeAnswer, families: AddressFamilies, ttlSeconds: UInt32? = nil) -> SourceAnswer {
        SourceAnswer(
            ipv4: families.contains(.ipv4) ? .negative(kind, ttlSeconds: ttlSeconds) : nil,
            ipv6: families.contains(.ipv6) ? .negative(kind, ttlSeconds: ttlSeconds) : nil
        )
    }
}

/// The two negative answers DNS gives.
public enum NegativeAnswer: Sendable, Hashable {
    /// NXDOMAIN: the name does not exist.
    case nameNotFound
    /// NOERROR with no records of the type: the name exists without an address of this family.
    case noData
}

/// The answer for one address family.
public enum FamilyAnswer<Address: Sendable & Hashable>: Sendable, Hashable {
    /// Addresses, valid for `ttlSeconds` (the smallest TTL along the CNAME chain and the records).
    case addresses([Address], ttlSeconds: UInt32)
    /// A negative answer; `ttlSeconds` is the negative TTL when the source knows it (RFC 2308), else nil.
    case negative(NegativeAnswer, ttlSeconds: UInt32?)
}

/// A source that answers many names in one request, as the native HTTPDNS API's `/resolve` does.
/// ``ResolverCache/preResolve(_:families:concurrency:)`` asks it in batches.
public protocol BatchResolutionSource: ResolutionSource {
    /// The most names one request carries.
    var maxBatchSize: Int { get }

    /// Asks for every host of `hosts` (at most ``maxBatchSize``) in one request.
    /// - Returns: an answer for each host, every family asked answered.
    /// - Throws: ``ResolutionError`` when the request as a whole failed; the cache then asks name by name.
    func queryBatch(_ hosts: [HostName], families: AddressFamilies) async throws(ResolutionError) -> [HostName: SourceAnswer]
}

/// A source that also relays DNS messages of any type as they are: what a resolver of every type (the service's
/// DoH endpoint) forwards what it does not parse through. `CAresSource` is one.
public protocol MessageRelaying: Sendable {
    /// Sends `query` upstream as it is and returns the answer as it came: every section kept. The answer's ID may
    /// be the relay's own, not the query's.
    /// - Throws: ``ResolutionError`` when no answer came.
    func send(_ query: [UInt8]) async throws -> [UInt8]
}
