import HTTPDNSTesting
import Testing

@Suite("ChildProcess.run")
struct ChildProcessRunTests {
    @Test("Captures stdout and stderr separately, and the exit code")
    func capturesBoth() async throws {
        let shell = try #require(ChildProcess.find("sh"))
        let run = try await ChildProcess.run(executable: shell, arguments: ["-c", "echo out; echo err >&2; exit 7"])
        #expect(run.status == .exited(7))
        #expect(run.stdout == "out\n")
        #expect(run.stderr == "err\n")
        #expect(!run.timedOut)
    }

    @Test("Output larger than a pipe's buffer on both streams does not deadlock")
    func largeOutput() async throws {
        let shell = try #require(ChildProcess.find("sh"))
        // Fill stderr first, then stdout: a reader waiting on stdout alone would never see the child finish.
        let run = try await ChildProcess.run(
            executable: shell,
            arguments: ["-c", "head -c 300000 /dev/zero >&2; head -c 300000 /dev/zero"],
            timeoutMs: 10_000
        )
        #expect(run.status == .exited(0))
        #expect(run.stdout.utf8.count == 300_000)
        #expect(run.stderr.utf8.count == 300_000)
        #expect(!run.timedOut)
    }

    @Test("A process outliving the timeout is killed and reaped")
    func timeout() async throws {
        let sleep = try #require(ChildProcess.find("sleep"))
        let run = try await ChildProcess.run(executable: sleep, arguments: ["30"], timeoutMs: 100)
        #expect(run.status == .signaled(9))
        #expect(run.timedOut)
    }
}
