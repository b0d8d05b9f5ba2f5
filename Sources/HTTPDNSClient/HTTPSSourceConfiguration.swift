import HTTPDNSCore
import Logging

/// The shape every HTTPS source's `Configuration` shares (``NativeServiceSource``, ``DoHSource``, ``JSONDNSSource``):
/// how the service is reached and the source's name, and from them the source's `ServiceClient`. Each source's
/// configuration adds its own settings (the native API's account and batch size, DoH's method).
package protocol HTTPSSourceConfiguration: Sendable {
    /// The service's addresses, TLS and failover timing.
    var connection: ServiceConnection { get set }
    /// The name in stats, logs and metric dimensions.
    var name: String { get }

    init(connection: ServiceConnection)
}

extension HTTPSSourceConfiguration {
    /// The source's name and the service's addresses: the source's `upstreamDescription`.
    var upstreamDescription: String { "\(name) via \(connection.servers.map(\.description).joined(separator: ", "))" }

    /// The same, with every server that names no path at `path`.
    func withDefaultPath(_ path: String) -> Self {
        var configuration = self
        configuration.connection = connection.withDefaultPath(path)
        return configuration
    }

    /// The client the source asks its service through, reading answers of at most `maxAnswerBytes`.
    /// - Throws: `ConfigurationError` naming a setting that cannot work.
    func makeClient(maxAnswerBytes: Int, clock: any MonotonicClock, logger: Logger) throws(ConfigurationError) -> ServiceClient {
        try ServiceClient(settings: .init(connection: connection, maxAnswerBytes: maxAnswerBytes, sourceName: name), clock: clock, logger: logger)
    }
}
