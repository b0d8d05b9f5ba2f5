import AsyncHTTPClient
import Logging

/// What an owner of AsyncHTTPClient instances does when it is dropped without being shut down: says so in the log,
/// and shuts the clients down without waiting. AsyncHTTPClient stops a debug build's process when a client it
/// never shut down goes away; a library must not, so the owner's `deinit` calls this instead.
package enum DroppedClients {
    /// Shuts `clients` down in the background and logs a warning naming `owner` once. Each client stays alive until
    /// its shutdown has ended (its callback holds it), so none goes away running.
    package static func shutDown(_ clients: [HTTPClient], owner: String, logger: Logger) {
        guard !clients.isEmpty else { return }
        logger.warning(
            "\(owner) was dropped without being shut down: its connections are closed in the background; call shutdown(), run it as a Service, or use its with… form",
            metadata: ["httpdns.clients": "\(clients.count)"]
        )
        for client in clients {
            client.shutdown { _ in }
        }
    }
}
