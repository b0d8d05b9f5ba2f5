extension ResolverCache {
    /// How the cache treats TTLs, failures and load. Every default is chosen for a backend that resolves a
    /// modest set of names often; each can be changed.
    public struct Configuration: Sendable, Hashable {
        /// Positive answers are kept at least this long, however small their TTL (protects the upstream from
        /// TTL-0 names). A whole number of seconds. Default 5 s.
        public var minTTL: Duration = .seconds(5)
        /// Positive answers are kept at most this long, however large their TTL (so changes are picked up).
        /// A whole number of seconds. Default 3600 s.
        public var maxTTL: Duration = .seconds(3600)
        /// The negative TTL used when the source does not give one (c-ares's `getaddrinfo` does not). A whole
        /// number of seconds. Default 30 s.
        public var negativeTTL: Duration = .seconds(30)
        /// Lower clamp for negative answers. A whole number of seconds. Default 1 s.
        public var minNegativeTTL: Duration = .seconds(1)
        /// Upper clamp for negative answers (RFC 2308 suggests at most a few hours; we keep it short). A whole
        /// number of seconds. Default 300 s.
        public var maxNegativeTTL: Duration = .seconds(300)
        /// The most names kept (one entry per name holds its A and AAAA answers); past it the least recently used
        /// name goes. Default 100,000.
        public var maxEntries: Int = 100_000
        /// The TTL given with a stale answer (RFC 8767 §4 recommends 30 s). A whole number of seconds. Default 30 s.
        public var staleAnswerTTL: Duration = .seconds(30)
        /// How long past its expiry an entry may still be served stale (RFC 8767 suggests 1 to 3 days). Zero turns
        /// serve-stale off. Default 86,400 s (1 day).
        public var maxStale: Duration = .seconds(86_400)
        /// How long a caller waits for the refresh of an expired entry before it is answered from that entry
        /// (RFC 8767 §5's client response timer, which recommends 1.8 s). The refresh goes on and fills the
        /// cache. Zero waits for the refresh to end, however long it takes. Default 1,800 ms.
        public var staleAnswerClientTimeout: Duration = .milliseconds(1800)
        /// After a refresh fails, stale answers are served without asking upstream again for this long
        /// (RFC 8767's failure recheck timer). Default 30 s.
        public var staleRefreshRetry: Duration = .seconds(30)
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
                throw ConfigurationError(.outOfRange, key: "maxEntries", reason: "must be a positive number of names, not \(maxEntries)")
            }
            guard maxPendingQueries > 0 else {
                throw ConfigurationError(
                    .outOfRange,
                    key: "maxPendingQueries",
                    reason: "must be a positive number of queries, not \(maxPendingQueries)"
                )
            }
            let ttlClamps: [(key: String, value: Duration)] = [
                ("minTTL", minTTL), ("maxTTL", maxTTL), ("negativeTTL", negativeTTL),
                ("minNegativeTTL", minNegativeTTL), ("maxNegativeTTL", maxNegativeTTL), ("staleAnswerTTL", staleAnswerTTL),
            ]
            for (key, value) in ttlClamps where Self.wholeSeconds(value) == nil {
                throw ConfigurationError(
                    .outOfRange,
                    key: key,
                    reason: "must be a whole number of seconds from 0 to \(UInt32.max) (a DNS TTL), not \(value)"
                )
            }
            for (key, value) in [("maxStale", maxStale), ("staleRefreshRetry", staleRefreshRetry)] where value < .zero {
                throw ConfigurationError(.outOfRange, key: key, reason: "must be 0 or a positive duration, not \(value)")
            }
            // Whole seconds from here on, checked above: the clamps are compared and named in seconds.
            let seconds = { (duration: Duration) in "\(Self.wholeSeconds(duration) ?? 0) s" }
            guard minTTL <= maxTTL else {
                throw ConfigurationError(
                    .inconsistent,
                    key: "minTTL",
                    reason: "(\(seconds(minTTL))) is larger than the largest TTL kept, maxTTL (\(seconds(maxTTL)))"
                )
            }
            guard minNegativeTTL <= maxNegativeTTL else {
                throw ConfigurationError(
                    .inconsistent,
                    key: "minNegativeTTL",
                    reason: "(\(seconds(minNegativeTTL))) is larger than the largest negative TTL kept, maxNegativeTTL (\(seconds(maxNegativeTTL)))"
                )
            }
            guard staleAnswerClientTimeout >= .zero else {
                throw ConfigurationError(
                    .outOfRange,
                    key: "staleAnswerClientTimeout",
                    reason: "must be 0 (wait for the refresh) or a positive duration, not \(staleAnswerClientTimeout)"
                )
            }
            guard refreshAheadFraction >= 0, refreshAheadFraction <= 1 else {
                throw ConfigurationError(.outOfRange, key: "refreshAheadFraction", reason: "must be between 0 and 1, not \(refreshAheadFraction)")
            }
        }

        /// `duration` as a TTL: whole seconds within `UInt32`, or nil.
        static func wholeSeconds(_ duration: Duration) -> UInt32? {
            guard duration >= .zero else { return nil }
            let (seconds, attoseconds) = duration.components
            guard attoseconds == 0, seconds <= Int64(UInt32.max) else { return nil }
            return UInt32(seconds)
        }
    }

    /// A validated ``Configuration`` in the integers the hot path works in, converted once when the cache is made
    /// so no lookup converts a `Duration`.
    struct Limits: Sendable {
        let minTTLSeconds: UInt32
        let maxTTLSeconds: UInt32
        let negativeTTLSeconds: UInt32
        let minNegativeTTLSeconds: UInt32
        let maxNegativeTTLSeconds: UInt32
        let maxEntries: Int
        let staleAnswerTTLSeconds: UInt32
        /// 0: serve-stale is off.
        let maxStaleNanoseconds: UInt64
        /// Whether a caller waiting on the refresh of an expired entry is answered stale after
        /// ``staleAnswerClientTimeout``.
        let armsStaleTimer: Bool
        let staleAnswerClientTimeout: Duration
        let staleRefreshRetryNanoseconds: UInt64
        let refreshAheadFraction: Double
        let maxPendingQueries: Int

        /// `configuration` has passed ``Configuration/validate()``.
        init(_ configuration: Configuration) {
            func seconds(_ duration: Duration) -> UInt32 { Configuration.wholeSeconds(duration) ?? 0 }
            // At most UInt32.max seconds, as a TTL can be, so instants stay far from overflowing; 0 when negative.
            func nanoseconds(_ duration: Duration) -> UInt64 {
                UInt64(clamping: min(duration, .seconds(Int64(UInt32.max))).clampedNanoseconds)
            }
            minTTLSeconds = seconds(configuration.minTTL)
            maxTTLSeconds = seconds(configuration.maxTTL)
            negativeTTLSeconds = seconds(configuration.negativeTTL)
            minNegativeTTLSeconds = seconds(configuration.minNegativeTTL)
            maxNegativeTTLSeconds = seconds(configuration.maxNegativeTTL)
            maxEntries = configuration.maxEntries
            staleAnswerTTLSeconds = seconds(configuration.staleAnswerTTL)
            maxStaleNanoseconds = nanoseconds(configuration.maxStale)
            armsStaleTimer = configuration.staleAnswerClientTimeout > .zero
            staleAnswerClientTimeout = configuration.staleAnswerClientTimeout
            staleRefreshRetryNanoseconds = nanoseconds(configuration.staleRefreshRetry)
            refreshAheadFraction = configuration.refreshAheadFraction
            maxPendingQueries = configuration.maxPendingQueries
        }
    }
}

extension MonotonicInstant {
    /// This instant moved `nanoseconds` later.
    func adding(nanoseconds duration: UInt64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: nanoseconds &+ duration)
    }
}
