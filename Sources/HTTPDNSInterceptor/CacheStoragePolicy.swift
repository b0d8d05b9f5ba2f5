/// Whether a response cache may keep a response: the three values of NSURLCacheStoragePolicy
/// (docs/CACHE-STORAGE-POLICY.md).
public enum CacheStoragePolicy: String, Sendable, Hashable, CaseIterable {
    case allowed
    case allowedInMemoryOnly
    case notAllowed

    /// How the decision is made.
    public struct Configuration: Sendable, Hashable {
        public enum Mode: String, Sendable, Hashable {
            /// RFC 9111 §3 for a private cache (the default).
            case standard
            /// Apple's CustomHTTPProtocol sample, exactly: a fixed list of statuses and substring matching.
            case apple
        }

        public var mode = Mode.standard
        /// `standard`: judge as a shared cache would (`private` and requests with `Authorization` not stored).
        /// Default off: the interceptor's cache is the process's own.
        public var sharedCache = false
        /// `standard`: whether the cache handles ranges, so a 206 may be stored. Default off.
        public var supportsRanges = false
        /// `standard`: whether an https response may be stored on disk. Default off: in memory only.
        public var httpsOnDisk = false

        public init(mode: Mode = .standard) {
            self.mode = mode
        }
    }

    /// The statuses RFC 9110 §15.1 calls heuristically cacheable.
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]
    /// The statuses the reference stores.
    static let appleStorable: Set<Int> = [200, 203, 206, 301, 304, 404, 410]

    /// The policy for a response to a request.
    /// - Parameters:
    ///   - method: the request's method, as sent.
    ///   - scheme: the request URL's scheme (any case).
    ///   - requestHeaders: the request's header fields, names in any case, a repeated field as several pairs.
    ///   - status: the response's status code.
    ///   - responseHeaders: the response's header fields.
    ///   - configuration: the mode, and the kind of cache asking.
    /// A Cache-Control field that does not parse counts, in `standard` mode, as one that forbids storing: a cache
    /// should not keep what it cannot read the rules of.
    public static func decide(
        method: String,
        scheme: String,
        requestHeaders: [(name: String, value: String)],
        status: Int,
        responseHeaders: [(name: String, value: String)],
        configuration: Configuration = Configuration()
    ) -> CacheStoragePolicy {
        let secure = scheme.lowercased() == "https"
        switch configuration.mode {
        case .apple:
            guard appleStorable.contains(status) else { return .notAllowed }
            // The reference reads the field as the URL loader joins it, lowercased, and looks for substrings.
            let response = joined(responseHeaders, "cache-control").lowercased()
            if response.contains("no-store") { return .notAllowed }
            let request = joined(requestHeaders, "cache-control").lowercased()
            if request.contains("no-store") && request.contains("no-cache") { return .notAllowed }
            return secure ? .allowedInMemoryOnly : .allowed
        case .standard:
            return standard(method: method, secure: secure, requestHeaders, status, responseHeaders, configuration)
        }
    }

    private static func standard(
        method: String,
        secure: Bool,
        _ requestHeaders: [(name: String, value: String)],
        _ status: Int,
        _ responseHeaders: [(name: String, value: String)],
        _ configuration: Configuration
    ) -> CacheStoragePolicy {
        guard method == "GET" || method == "HEAD" else { return .notAllowed }
        guard status >= 200, status != 304, status <= 599 else { return .notAllowed }
        if status == 206, !configuration.supportsRanges { return .notAllowed }
        guard let request = try? CacheControl(parsing: values(requestHeaders, "cache-control")),
            let response = try? CacheControl(parsing: values(responseHeaders, "cache-control"))
        else { return .notAllowed }
        if request.contains("no-store") || response.contains("no-store") { return .notAllowed }
        // Vary: * — no later request can be known to match.
        let vary = values(responseHeaders, "vary").flatMap { $0.split(separator: ",") }
        if vary.contains(where: { $0.trimmingWhitespace == "*" }) { return .notAllowed }
        if configuration.sharedCache {
            if response.contains("private") { return .notAllowed }
            let authorized = !values(requestHeaders, "authorization").isEmpty
            if authorized, !(response.contains("public") || response.contains("s-maxage") || response.contains("must-revalidate")) {
                return .notAllowed
            }
        }
        // RFC 9111 §3: explicit freshness, `public`, or — for a cache that is not shared — `private`.
        let explicit =
            response.contains("max-age") || (configuration.sharedCache && response.contains("s-maxage"))
            || !values(responseHeaders, "expires").isEmpty || response.contains("public")
            || (!configuration.sharedCache && response.contains("private"))
        guard explicit || heuristicallyCacheable.contains(status) else { return .notAllowed }
        return secure && !configuration.httpsOnDisk ? .allowedInMemoryOnly : .allowed
    }

    /// Every value of the field `name` (any case), in order.
    static func values(_ headers: [(name: String, value: String)], _ name: String) -> [String] {
        var values: [String] = []
        for header in headers where equalIgnoringASCIICase(header.name, name) { values.append(header.value) }
        return values
    }

    /// The values of the field `name`, joined with ", " as the URL loader joins a repeated field.
    static func joined(_ headers: [(name: String, value: String)], _ name: String) -> String {
        values(headers, name).joined(separator: ", ")
    }
}

extension Substring {
    var trimmingWhitespace: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
