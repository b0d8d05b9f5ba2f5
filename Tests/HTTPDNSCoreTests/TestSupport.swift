import HTTPDNSCore
import HTTPDNSTesting
import Testing

/// A host name from a literal the test knows to be valid.
func host(_ string: String) -> HostName {
    do {
        return try HostName(string)
    } catch {
        preconditionFailure("test host name '\(string)' is invalid: \(error)")
    }
}

/// An IPv4 address from a literal the test knows to be valid.
func v4(_ string: String) -> IPv4Address {
    guard let address = IPv4Address(string) else { preconditionFailure("test IPv4 literal '\(string)' is invalid") }
    return address
}

/// An IPv6 address from a literal the test knows to be valid.
func v6(_ string: String) -> IPv6Address {
    guard let address = IPv6Address(string) else { preconditionFailure("test IPv6 literal '\(string)' is invalid") }
    return address
}

/// A cache configuration with the defaults changed by `change`.
func configuration(_ change: (inout ResolverCache.Configuration) -> Void = { _ in }) -> ResolverCache.Configuration {
    var configuration = ResolverCache.Configuration()
    change(&configuration)
    return configuration
}

/// One test's cache, with its own scripted source and manual clock.
struct CacheFixture {
    let source: ScriptedSource
    let clock: ManualMonotonicClock
    let cache: ResolverCache

    init(_ change: (inout ResolverCache.Configuration) -> Void = { _ in }) throws {
        source = ScriptedSource()
        clock = ManualMonotonicClock()
        cache = try ResolverCache(source: source, configuration: configuration(change), clock: clock)
    }
}

/// Waits until `condition` holds, giving other tasks the thread in between.
///
/// This is for state that offers no notification of its own (the cache's stats after a background refresh, or
/// the number of callers that joined a flight). It makes no timing assumption: it only re-checks after yielding.
/// If the condition never comes true, the suite's time limit cancels the test, and the wait ends with an issue.
func waitUntil(
    _ description: @autoclosure () -> String = "condition",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async {
    while !condition() {
        if Task.isCancelled {
            Issue.record("cancelled while waiting for \(description())", sourceLocation: sourceLocation)
            return
        }
        await Task.yield()
    }
}

extension ResolverStats {
    /// Upstream queries of the scripted source with `outcome`.
    func upstream(_ outcome: String, source: String = "scripted") -> Int {
        upstreamQueries[UpstreamOutcome(source: source, outcome: outcome), default: 0]
    }
}
