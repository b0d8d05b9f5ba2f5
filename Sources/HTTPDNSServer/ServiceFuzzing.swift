// Built only with the package trait `Fuzzing`, which Fuzz/Package.swift enables: no product a user installs
// holds the fuzz entry points or NIOEmbedded.
#if Fuzzing
import HTTPDNSCore
import HummingbirdCore
@_spi(Fuzzing) import HTTPDNSServerTransport
import Logging

/// Entry points for the fuzz targets in `Fuzz/` (libFuzzer): raw bytes into the service's HTTP/1.1 and HTTP/2
/// connections, as a client's bytes arrive after TLS. Not API: `@_spi(Fuzzing)` keeps it out of the public
/// interface.
///
/// The service behind them is real (``HTTPDNSService``, its router, its cache-hit path) over a source that answers
/// every name with one address at once. Over HTTP/2 a fuzzed request reaches every route, hits and misses alike;
/// over HTTP/1.1, the front and the cache hits.
@_spi(Fuzzing) public final class ServiceFuzzing: Sendable {
    private let cacheHits: CacheHitResponder
    private let router: RouterBridge

    /// The service the connections answer for, with its router built once: made once per fuzz process.
    public init() throws {
        var configuration = HTTPDNSServerConfiguration()
        configuration.rateLimitPerSecond = 0
        configuration.accounts = ["acct": .init(secret: "fuzz-secret", requireSignature: false, allowMD5Signature: false)]
        let quiet = Logger(label: "httpdns.fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        let cache = try ResolverCache(source: EveryNameSource(), logger: quiet)
        let service = try HTTPDNSService(configuration: configuration, resolver: cache, metrics: nil)
        cacheHits = service.cacheHitResponder(logger: quiet)
        router = RouterBridge(responder: service.makeRouter().buildResponder(), logger: quiet, maxBodyBytes: configuration.maxDNSMessageBytes)
    }

    /// `bytes` into the service's HTTP/1.1 pipeline (``TransportFuzzing/http1(_:cacheHits:)``).
    public func http1(_ bytes: UnsafeRawBufferPointer) {
        TransportFuzzing.http1(bytes, cacheHits: cacheHits)
    }

    /// `bytes` into the service's HTTP/2 connection with its router behind it (``TransportFuzzing/http2(_:cacheHits:router:)``).
    /// - Returns: what was still counted after the close, or nil when all was let go.
    public func http2(_ bytes: [UInt8]) async -> String? {
        await TransportFuzzing.http2(bytes, cacheHits: cacheHits, router: router)
    }
}

/// Every name has the address 192.0.2.1, with a TTL of 60 s; "nx." names do not exist.
private struct EveryNameSource: ResolutionSource {
    var name: String { "fuzz" }

    func query(_ host: HostName, families: AddressFamilies) async throws -> SourceAnswer {
        if host.description.hasPrefix("nx.") { return .negative(.nameNotFound, families: families) }
        return SourceAnswer(
            ipv4: families.contains(.ipv4) ? .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 60) : nil,
            ipv6: families.contains(.ipv6) ? .addresses([], ttlSeconds: 60) : nil
        )
    }
}

extension ServiceFuzzing {
    /// The names the routes read from a query.
    public static let queryParameterNames = ["host", "query", "dns", "name", "type", "t", "s", "ct", "do", "cd"]

    /// A request target as the cache-hit paths read it (`PlainTarget`), against Hummingbird's `URI`, which the router
    /// reads: for every target the hit paths would answer (`PlainTarget` takes it, and its path is `/d` or
    /// `/dns-query`), the path and each name's first value must be the same both ways, or a hit and a miss would
    /// read one request two ways.
    ///
    /// Other targets may be read differently without harm, as the hit paths hand them to the router: `URI` takes a
    /// "/" followed by a combining mark for the start of an absolute URL when "://" comes later (its first
    /// `Character` is not "/"), and `PlainTarget` reads it as a path; neither path is one the hit paths answer.
    /// - Returns: what differs; nil when they agree or the hit paths would not answer the target.
    public static func queryParametersDiffer(_ target: String) -> String? {
        guard let plain = PlainTarget(target), plain.path == "/d" || plain.path == "/dns-query" else { return nil }
        let uri = URI(target)
        if uri.path != String(plain.path) {
            return "the path: PlainTarget read '\(plain.path)', URI read '\(uri.path)' in \(target.debugDescription)"
        }
        let parsed = uri.queryParameters
        for name in queryParameterNames where plain.first(name) != parsed.first(name) {
            return "\(name): PlainTarget read \(plain.first(name).map { "'\($0)'" } ?? "nothing"), URI read \(parsed.first(name).map { "'\($0)'" } ?? "nothing") in \(target.debugDescription)"
        }
        return nil
    }
}
#endif
