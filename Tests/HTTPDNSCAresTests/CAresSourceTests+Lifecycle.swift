import HTTPDNSCAres
import HTTPDNSCore
import Testing

extension CAresSourceTests {
    /// Cancellation and shutdown. Nested in the serialized ``CAresSourceTests`` so that no other test opens
    /// descriptors or threads while these count them.
    @Suite("Lifecycle")
    struct Lifecycle {
        @Test("Cancelling the awaiting task ends its lookup with CancellationError")
        func cancelInFlight() async throws {
            var configuration = FaultyDNSServer.Configuration()
            configuration.behavior = .silent
            try await withFaultyDNSServer(configuration) { server in
                // A timeout far beyond the test's time limit: only cancellation can end the lookup.
                try await CAresSourceTests.withSource([server.address], timeoutMs: 600_000) { source in
                    let lookup = Task { try await source.query(HostName("slow.test"), families: .all) }
                    await server.waitForQueries(2)
                    lookup.cancel()
                    await #expect(throws: CancellationError.self) { try await lookup.value }
                }
            }
        }

        @Test("A task cancelled before it asks sends no query")
        func cancelledBeforeAsking() async throws {
            try await withFaultyDNSServer { server in
                try await CAresSourceTests.withSource([server.address]) { source in
                    let lookup = Task {
                        withUnsafeCurrentTask { $0?.cancel() }
                        return try await source.query(HostName("never.test"), families: .ipv4)
                    }
                    await #expect(throws: CancellationError.self) { try await lookup.value }
                    // Queries leave in order on one socket, so had never.test been sent it would be seen first.
                    _ = try await source.query(HostName("after.test"), families: .ipv4)
                    #expect(server.activity.queries.map(\.name) == ["after.test"])
                }
            }
        }

        @Test("Lookups after shutdown fail with shutdown")
        func lookupAfterShutdown() async throws {
            try await withFaultyDNSServer { server in
                let source = try CAresSourceTests.makeSource([server.address])
                _ = try await source.query(HostName("before.test"), families: .ipv4)
                await source.shutdown()
                let error = await #expect(throws: ResolutionError.self) {
                    try await source.query(HostName("after.test"), families: .all)
                }
                #expect(error?.code == .shutdown)
                #expect(server.activity.queries.map(\.name) == ["before.test"])
            }
        }

        @Test("Shutdown fails a lookup in flight with shutdown", arguments: [CAresSource.Configuration.Transport.udp, .tcp])
        func shutdownWithLookupInFlight(transport: CAresSource.Configuration.Transport) async throws {
            var configuration = FaultyDNSServer.Configuration()
            configuration.behavior = .silent
            try await withFaultyDNSServer(configuration) { server in
                let source = try CAresSourceTests.makeSource([server.address], transport: transport, timeoutMs: 600_000)
                let lookup = Task { try await source.query(HostName("pending.test"), families: .all) }
                await server.waitForQueries(2)
                await source.shutdown()
                let error = await #expect(throws: ResolutionError.self) { try await lookup.value }
                #expect(error?.code == .shutdown)
            }
        }

        @Test("Shutting down twice, one after the other or at once, is fine")
        func shutdownTwice() async throws {
            try await withFaultyDNSServer { server in
                let first = try CAresSourceTests.makeSource([server.address])
                _ = try await first.query(HostName("one.test"), families: .ipv4)
                await first.shutdown()
                await first.shutdown()

                let second = try CAresSourceTests.makeSource([server.address])
                _ = try await second.query(HostName("two.test"), families: .ipv4)
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 { group.addTask { await second.shutdown() } }
                }
                for source in [first, second] {
                    let error = await #expect(throws: ResolutionError.self) {
                        try await source.query(HostName("three.test"), families: .ipv4)
                    }
                    #expect(error?.code == .shutdown)
                }
            }
        }

        /// This test compares the whole process's descriptors and threads before and after, so tests running
        /// in parallel in other suites can disturb it: `scripts/test.sh` runs it in a process of its own.
        ///
        /// Descriptors are compared by number *and* target (`socket:[inode]`), so a number the source closed
        /// and something else reopened does not pass. Threads are compared by ID rather than by count: the
        /// Dispatch workers behind Swift concurrency start and retire on their own (a worker idle for a few
        /// seconds exits), so the count moves without any help from the source.
        @Test("Shutdown closes every descriptor the source opened and ends its thread", arguments: [CAresSource.Configuration.Transport.udp, .tcp])
        func shutdownReleasesResources(transport: CAresSource.Configuration.Transport) async throws {
            var configuration = FaultyDNSServer.Configuration()
            configuration.behaviors["held.test"] = .silent
            try await withFaultyDNSServer(configuration) { server in
                // Whatever c-ares, the runtime or the test library open once, they open here, before the baseline.
                try await CAresSourceTests.withSource([server.address], transport: transport) { source in
                    _ = try await source.query(HostName("warmup.test"), families: .all)
                }
                await server.wait { $0.openTCPConnections == 0 }

                let descriptorsBefore = ProcessResources.openFileDescriptors()
                let threadsBefore = ProcessResources.threadIDs()
                let source = try CAresSourceTests.makeSource([server.address], transport: transport, timeoutMs: 600_000)
                // The thread exists once init returns, and nothing else starts threads while this suite runs.
                let sourceThreads = ProcessResources.threadIDs().subtracting(threadsBefore)
                #expect(sourceThreads.count == 1, "the source should start exactly one thread")

                _ = try await source.query(HostName("answered.test"), families: .all)
                // c-ares closes its sockets whenever no query is pending, so keep one pending while looking.
                let held = Task { try await source.query(HostName("held.test"), families: .all) }
                await server.wait { $0.queries.count { $0.name == "held.test" } == 2 }
                let opened = ProcessResources.openFileDescriptors().filter { descriptorsBefore[$0.key] != $0.value }
                // The comparison below proves something only if the source really held descriptors: its
                // eventfd and its socket (over TCP, the stub's end of the connection too).
                #expect(opened.values.contains("anon_inode:[eventfd]"), "\(opened)")
                #expect(opened.values.count { $0.hasPrefix("socket:") } == (transport == .tcp ? 2 : 1), "\(opened)")

                await source.shutdown()
                await #expect(throws: ResolutionError.self) { try await held.value }
                // Over TCP the stub holds the other end of the connection until it reads the close.
                await server.wait { $0.openTCPConnections == 0 }
                let descriptorsAfter = ProcessResources.openFileDescriptors()
                let leaked = descriptorsAfter.filter { descriptorsBefore[$0.key] != $0.value }
                let lost = descriptorsBefore.filter { descriptorsAfter[$0.key] != $0.value }
                #expect(leaked.isEmpty, "still open after shutdown: \(leaked)")
                #expect(lost.isEmpty, "closed by shutdown but not opened by the source: \(lost)")
                #expect(descriptorsAfter.count == descriptorsBefore.count)

                // pthread_join returns when the kernel clears the thread's ID, a moment before it drops
                // /proc/self/task/TID; nothing signals that last step, so look again for up to a second.
                var attempts = 0
                while !ProcessResources.threadIDs().isDisjoint(with: sourceThreads), attempts < 1000 {
                    attempts += 1
                    try await Task.sleep(for: .milliseconds(1))
                }
                let lingering = ProcessResources.threadIDs().intersection(sourceThreads)
                #expect(lingering.isEmpty, "the source's thread \(lingering) outlived shutdown")
            }
        }
    }
}
