/// One name as a cache holds it, in a form that can outlive the process: what a warm start saves and loads.
public struct CachedEntry: Sendable, Hashable {
    public var host: HostName
    /// The IPv4 answer with the TTL it was stored with (before the cache's clamps), if the cache holds one.
    public var ipv4: FamilyAnswer<IPv4Address>?
    /// The IPv6 answer, likewise.
    public var ipv6: FamilyAnswer<IPv6Address>?

    public init(host: HostName, ipv4: FamilyAnswer<IPv4Address>?, ipv6: FamilyAnswer<IPv6Address>?) {
        self.host = host
        self.ipv4 = ipv4
        self.ipv6 = ipv6
    }
}

extension ResolverCache {
    /// Every name the cache holds that could still be served (fresh, or expired within the staleness limit), most
    /// recently used first: for saving to a file, so a restarted process starts warm.
    public func entries() -> [CachedEntry] {
        let now = clock.now()
        return state.withLock { state in
            var entries: [CachedEntry] = []
            entries.reserveCapacity(state.storage.count)
            state.storage.forEachNewestFirst { host, entry in
                func keep<Address>(_ record: FamilyRecord<Address>?) -> FamilyAnswer<Address>? {
                    guard let record, record.condition(at: now, limits) != .gone else { return nil }
                    if let negative = record.negative { return .negative(negative, ttlSeconds: record.originTTLSeconds) }
                    return .addresses(record.addresses, ttlSeconds: record.originTTLSeconds)
                }
                let entry = CachedEntry(host: host, ipv4: keep(entry.ipv4), ipv6: keep(entry.ipv6))
                if entry.ipv4 != nil || entry.ipv6 != nil { entries.append(entry) }
            }
            return entries
        }
    }

    /// Loads `entries` as stale: expired now, so they are served only under the serve-stale rules (RFC 8767) —
    /// when the source fails or is slow — while every lookup asks the source as usual. A backend that restarts
    /// while its upstream is down still reaches its hosts. Names the cache holds already keep what it holds; the
    /// most recently used of `entries` are kept when they are more than ``Configuration/maxEntries``.
    public func loadStale(_ entries: [CachedEntry]) {
        let now = clock.now()
        let count = state.withLock { state in
            for entry in entries.prefix(limits.maxEntries).reversed() where state.storage.slot(of: entry.host) == nil {
                func expired<Address>(_ answer: FamilyAnswer<Address>?) -> FamilyRecord<Address>? {
                    guard let answer else { return nil }
                    var record = FamilyRecord(answer, now: now, limits: limits)
                    record.expiresAt = now
                    record.refreshAt = now
                    return record
                }
                var hostEntry = HostEntry()
                hostEntry.ipv4 = expired(entry.ipv4)
                hostEntry.ipv6 = expired(entry.ipv6)
                state.storage.set(hostEntry, for: entry.host)
            }
            _ = state.evictOverflow(limits: limits)
            return state.storage.count
        }
        metrics.entries.record(count)
    }
}
