/// A snapshot of what a ``ResolverCache`` has done since it was made.
public struct ResolverStats: Sendable, Hashable {
    /// One upstream outcome of one source: the key of ``upstreamQueries``.
    public struct UpstreamOutcome: Sendable, Hashable, CustomStringConvertible {
        /// The source's name (`cares`, `system`).
        public var source: String
        /// `success`, a negative answer (`nameNotFound`, `noAddress`) or an error code (`timeout`, …).
        public var outcome: String

        public init(source: String, outcome: String) {
            self.source = source
            self.outcome = outcome
        }

        public var description: String { "\(source)/\(outcome)" }
    }

    /// Lookups answered from a fresh positive entry.
    public var hits = 0
    /// Lookups answered from an expired entry because refreshing it failed (RFC 8767).
    public var staleHits = 0
    /// Lookups that had to wait for an upstream query (their own or one already in flight).
    public var misses = 0
    /// Lookups answered from a fresh negative entry (NXDOMAIN or no data).
    public var negativeHits = 0
    /// Entries removed to keep the cache within its size bound.
    public var evictions = 0
    /// Misses that joined an upstream query already in flight instead of starting one.
    public var coalescedLookups = 0
    /// Misses refused because too many upstream queries were pending.
    public var rejectedLookups = 0
    /// Upstream queries by source and outcome.
    public var upstreamQueries: [UpstreamOutcome: Int] = [:]
    /// Entries in the cache now: one per name, stale ones included.
    public var entries = 0
    /// Upstream queries in flight now.
    public var pendingQueries = 0

    public init() {}

    /// All upstream queries, whatever their outcome.
    public var totalUpstreamQueries: Int { upstreamQueries.values.reduce(0, +) }
}
