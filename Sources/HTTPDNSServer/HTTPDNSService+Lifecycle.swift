import Logging
import ServiceLifecycle

extension HTTPDNSService: Service {
    /// Runs the service in a swift-service-lifecycle `ServiceGroup`: it listens until the group shuts down
    /// gracefully (or the task is cancelled), then stops accepting connections, lets the requests in flight finish,
    /// and returns. Logs through ``logger``. Unlike ``run(logger:onListening:)``, it installs no signal handlers: the
    /// group has them.
    public func run() async throws {
        try await makeApplication(logger: logger).run()
    }
}

/// Runs `service` until `body` returns or throws, then shuts it down gracefully: the scoped form of the service's
/// lifecycle, beside running it as a `Service`.
/// - Parameters:
///   - service: the service to run.
///   - isolation: the caller's actor.
///   - body: given the port the service listens on once it does (useful when the configuration asked for port 0).
/// - Throws: the service's own error when it cannot start (an address it cannot bind, a certificate it cannot
///   read), ``HTTPDNSServiceError`` when it stopped before it listened, `CancellationError` when the caller was
///   cancelled before it listened, or what `body` throws (first, when both failed). A service that fails while the
///   body runs does not interrupt the body: its error is thrown when the body returns.
public func withHTTPDNSService<Result: Sendable>(
    _ service: HTTPDNSService,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (Int) async throws -> Result
) async throws -> Result {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let application = try service.makeApplication(logger: service.logger) { port in continuation.yield(port) }
    // A group of its own, so that the end of the body is a graceful shutdown (requests in flight finish), not a
    // cancellation.
    let group = ServiceGroup(services: [application], logger: service.logger)
    return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { tasks in
        tasks.addTask {
            defer { continuation.finish() }
            try await group.run()
        }
        var listening = ports.makeAsyncIterator()
        guard let port = await listening.next() else {
            // run() ended without listening: its error says why, or the caller was cancelled.
            try await tasks.next()
            try Task.checkCancellation()
            throw HTTPDNSServiceError(.stoppedBeforeListening, "the service stopped before it listened")
        }
        let result: Swift.Result<Result, any Error>
        do {
            result = .success(try await body(port))
        } catch {
            result = .failure(error)
        }
        await group.triggerGracefulShutdown()
        switch result {
        case .success(let value):
            // The service's own error, if it failed while the body ran.
            try await tasks.waitForAll()
            return value
        case .failure(let error):
            // The body's error is the one the caller gets; the service's, if any, is logged by the group.
            try? await tasks.waitForAll()
            throw error
        }
    }
}

/// Why the service could not be run.
public struct HTTPDNSServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. A struct, so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case stoppedBeforeListening = "stopped_before_listening"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The service stopped, without an error of its own, before it listened.
        public static let stoppedBeforeListening = Code(.stoppedBeforeListening)

        /// Every code.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong.
    public let message: String
    /// The error underneath, when there is one. Not compared or hashed.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: what kind of failure this is.
    ///   - message: what went wrong.
    ///   - cause: the error underneath.
    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: HTTPDNSServiceError, rhs: HTTPDNSServiceError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }
}
