import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSTesting
import Logging
import Testing

/// The client's lifecycle: dropped without shutdown it logs instead of stopping the process (AsyncHTTPClient
/// stops a debug build, which this test is, when one of its clients goes away running); the scoped form shuts down.
@Suite struct InterceptorLifecycleTests {
    @Test func aClientDroppedWithoutShutdownLogsAndTheProcessGoesOn() throws {
        let records = RecordingLogHandler.Records()
        do {
            let client = try InterceptingHTTPClient(
                resolver: HostResolver(trusted: StaticSource(), fallbacks: []),
                logger: RecordingLogHandler.logger(records)
            )
            _ = client.clientCount
        }
        let warnings = records.all.filter { $0.level == .warning }.map(\.message)
        #expect(warnings.contains { $0.contains("InterceptingHTTPClient was dropped without being shut down") }, "\(warnings)")
    }

    @Test func theScopedFormShutsTheClientDown() async throws {
        let records = RecordingLogHandler.Records()
        let resolver = try HostResolver(trusted: StaticSource(), fallbacks: [])
        let kept = try await withInterceptingHTTPClient(resolver: resolver, logger: RecordingLogHandler.logger(records)) { $0 }
        // Used after its scope: refused as shut down, and dropping it now says nothing.
        await #expect(throws: InterceptorError.self) {
            _ = try await kept.execute(method: "GET", url: "https://example.test/", timeout: .seconds(1))
        }
        #expect(!records.all.contains { $0.message.contains("dropped without being shut down") })
    }
}
