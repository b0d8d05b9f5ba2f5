extension ResolverCache {
    /// How the cache treats TTLs, failures and load. Every default is chosen for a backend that resolves a
    /// modest set of names often; each can be changed.
    public struct Configuration: Sendable, Hashable {
        /// Positive answers are kept at least this long, however small their TTL (protects the upstream from
        /// TTL-0 names). Default 5 s.
        public var minTTLSeconds: UInt32 = 5
        /// Positive answers are kept at most this long, however large their TTL (so changes are picked up).
        /// Default 3600 s.
        public var maxTTLSeconds: UInt32 = 3600
        /// The negative TTL used when the source does not give one (c-ares's `getaddrinfo` does not). Default 30 s.
        public var negativeTTLSeconds: UInt32 = 30
        /// Lower clamp for negative answers. Default 1 s.
        public var minNegativeTTLSeconds: UInt32 = 1
        /// Upper clamp for negative answers (RFC 2308 suggests at most a few hours; we keep it short). Default 300 s.
        public var maxNegativeTTLSeconds: UInt32 = 300
        /// The most names kept (one entry per name holds its A and AAAA answers); past it the least recently used
        /// name goes. Default 100,000.
        public var maxEntries: Int = 100_000
        /// The TTL given with a stale answer (RFC 8767 §4 recommends 30 s). Default 30 s.
        public var staleAnswerTTLSeconds: UInt32 = 30
        /// How long past its expiry an entry may still be served stale (RFC 8767 suggests 1 to 3 days). 0 turns
        /// serve-stale off. Default 86,400 s (1 day).
        public var maxStaleSeconds: UInt32 = 86_400
        /// How long a caller waits for the refresh of an expired entry before it is answered from that entry
        /// (RFC 8767 §5's client response timer, which recommends 1.8 s). The refresh goes on and fills the
        /// cache. 0 waits for the refresh to end, however long it takes. Default 1,800 ms.
        public var staleAnswerClientTimeoutMs: Int = 1800
        /// After a refresh fails, stale answers are served without asking upstream again for this long
        /// (RFC 8767's failure recheck timer). Default 30 s.
        public var staleRefreshRetrySeconds: UInt32 = 30
        /// An entry that is used when less than this fraction of its TTL is left is refreshed in the background.
        /// 0 turns refresh-ahead off. Default 0.1.
        public var refreshAheadFraction: Double = 0.1
        /// The most names (per family set) being looked up upstream at once; a miss past it fails at once with
        /// ``ResolutionError/Code/tooManyPendingQueries``. Default 1024.
        public var maxPendingQueries: Int = 1024

        public init() {}

        /// Checks the settings against each other and their ranges.
        /// - Throws: ``ConfigurationError`` naming the first setting that cannot work.
        public func validate() throws(ConfigurationError) {
            guard maxEntries > 0 else {
                throw ConfigurationError(key: "maxEntries", reason: "must be a positive number of names, not \(maxEntries)")
            }
            guard maxPendingQueries > 0 else {
                throw ConfigurationError(key: "maxPendingQueries", reason: "must be a positive number of queries, not \(maxPendingQueries)")
            }
            guard minTTLSeconds <= maxTTLSeconds else {
                throw ConfigurationError(
                    key: "minTTLSeconds",
                    reason: "(\(minTTLSeconds)) is larger than the largest TTL kept, maxTTLSeconds (\(maxTTLSeconds))"
                )
            }
            guard minNegativeTTLSeconds <= maxNegativeTTLSeconds else {
                throw ConfigurationError(
                    key: "minNegativeTTLSeconds",
                    reason: "(\(minNegativeTTLSeconds)) is larger than the largest negative TTL kept, maxNegativeTTLSeconds (\(maxNegativeTTLSeconds))"
                )
            }
            guard staleAnswerClientTimeoutMs >= 0 else {
                throw ConfigurationError(
                    key: "staleAnswerClientTimeoutMs",
                    reason: "must be 0 (wait for the refresh) or a positive number of milliseconds, not \(staleAnswerClientTimeoutMs)"
                )
            }
            guard refreshAheadFraction >= 0, refreshAheadFraction <= 1 else {
                throw ConfigurationError(key: "refreshAheadFraction", reason: "must be between 0 and 1, not \(refreshAheadFraction)")
            }
        }
    }
}
