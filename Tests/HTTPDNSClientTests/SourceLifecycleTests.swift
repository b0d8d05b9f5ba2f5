import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSTesting
import Logging
import Testing

/// The HTTPS sources' lifecycle: dropped without shutdown they log instead of stopping the process (AsyncHTTPClient
/// stops a debug build, which this test is, when one of its clients goes away running); a resolver owns its sources.
@Suite struct SourceLifecycleTests {
    static func connection() throws -> ServiceConnection {
        // Never asked: the tests make no lookup.
        ServiceConnection(servers: [try ServiceEndpoint(parsing: "https://127.0.0.1:9")])
    }

    @Test func aSourceDroppedWithoutShutdownLogsAndTheProcessGoesOn() throws {
        let records = RecordingLogHandler.Records()
        do {
            let source = try NativeServiceSource(configuration: .init(connection: Self.connection()), logger: RecordingLogHandler.logger(records))
            _ = source.name
        }
        do {
            let source = try DoHSource(configuration: .init(connection: Self.connection()), logger: RecordingLogHandler.logger(records))
            _ = source.name
        }
        let warnings = records.all.filter { $0.level == .warning }.map(\.message)
        #expect(warnings.count == 2, "\(warnings)")
        #expect(warnings.allSatisfy { $0.contains("dropped without being shut down") }, "\(warnings)")
    }

    @Test func aResolverShutsDownTheSourcesItOwns() async throws {
        let records = RecordingLogHandler.Records()
        let source = try JSONDNSSource(configuration: .init(connection: Self.connection()), logger: RecordingLogHandler.logger(records))
        try await withHostResolver(trusted: source, fallbacks: []) { _ in }
        // Shut down by the resolver: a lookup is refused at once, without asking the address.
        await #expect {
            _ = try await source.query(try HostName("example.test"), families: .ipv4)
        } throws: { error in
            (error as? ResolutionError)?.code == .shutdown
        }
        #expect(!records.all.contains { $0.message.contains("dropped without being shut down") })
    }
}
