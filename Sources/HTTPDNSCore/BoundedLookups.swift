/// Looks up many names at most `concurrency` at a time: what ``ResolverCache/preResolve(_:families:concurrency:)``
/// and ``HostResolver`` use to warm a cache without passing its pending-query bound.
enum BoundedLookups {
    /// Runs `lookUp` for each of `names`, at most `concurrency` at once.
    /// - Returns: the names that failed, with their errors. Negative answers are answers, not failures.
    /// - Throws: ``ConfigurationError`` when `concurrency` is not positive.
    static func run(
        _ names: [(host: HostName, families: AddressFamilies)],
        concurrency: Int,
        _ lookUp: @escaping @Sendable (HostName, AddressFamilies) async throws -> Void
    ) async throws(ConfigurationError) -> [HostName: ResolutionError] {
        guard concurrency > 0 else {
            throw ConfigurationError(.outOfRange, key: "concurrency", reason: "must be a positive number of lookups at once, not \(concurrency)")
        }
        return await withTaskGroup(of: (HostName, ResolutionError?).self) { group in
            func start(_ name: (host: HostName, families: AddressFamilies)) {
                group.addTask {
                    do {
                        try await lookUp(name.host, name.families)
                        return (name.host, nil)
                    } catch let error as ResolutionError {
                        return (name.host, error.code.isNegativeAnswer ? nil : error)
                    } catch {
                        return (name.host, ResolutionError(.internalError, "\(error)"))
                    }
                }
            }
            var next = 0
            while next < names.count, next < concurrency {
                start(names[next])
                next += 1
            }
            var failures: [HostName: ResolutionError] = [:]
            for await (host, error) in group {
                if let error { failures[host] = error }
                if next < names.count {
                    start(names[next])
                    next += 1
                }
            }
            return failures
        }
    }
}
