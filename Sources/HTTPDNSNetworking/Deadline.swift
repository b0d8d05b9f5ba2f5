import NIOCore

/// Runs `operation` against `deadline`: its result if it ends first, nil if the deadline comes first (the operation
/// is then cancelled). For work whose own timeouts do not cover all of it, such as an AsyncHTTPClient body, which
/// its request deadline stops watching once the head arrives.
package func withDeadline<Result: Sendable>(
    _ deadline: NIODeadline,
    _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result? {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            let left = deadline.uptimeNanoseconds.subtractingReportingOverflow(NIODeadline.now().uptimeNanoseconds)
            try await Task.sleep(nanoseconds: left.overflow ? 0 : left.partialValue)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next() ?? nil
    }
}
