import HTTPDNSCore
import Testing

@testable import HTTPDNSCAres

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(1))) struct CAresSourceDeinitTests {
    /// A source dropped without `shutdown()` still stops its event thread (and with it, c-ares's sockets).
    @Test func aDroppedSourceEndsItsThread() async throws {
        try await withFaultyDNSServer { server in
            var source: CAresSource? = try CAresSourceTests.makeSource([server.address])
            _ = try await source!.query(HostName("one.test"), families: .ipv4)
            let thread = try #require(source!.loop.threadID.withLock { $0 })
            #expect(Self.threadName(thread) == "httpdns-cares")
            source = nil
            // The thread is detached, so nothing can be awaited: look until it is gone (bounded by the time limit).
            while ProcessResources.threadIDs().contains(thread) {
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(!ProcessResources.threadIDs().contains(thread))
        }
    }

    private static func threadName(_ thread: Int32) -> String? {
        guard let file = fopen("/proc/self/task/\(thread)/comm", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 64)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        return String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
