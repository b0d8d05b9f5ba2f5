import Foundation
import Glibc
import HTTPDNSSynchronization

/// A process a test starts and must stop: spawned with `posix_spawn`, stderr captured through a pipe.
///
/// Foundation's `Process` is not used: it spawns from a Dispatch worker thread whose signal mask blocks SIGTERM
/// (the child inherits it), and it reaps children one blocking `wait4` at a time, which hangs when tests start
/// servers in parallel. Here the child starts with an empty signal mask and is reaped by its own `waitpid`.
public final class ChildProcess: Sendable {
    public struct SpawnError: Error, CustomStringConvertible {
        public let description: String
    }

    public let pid: pid_t
    private let stderrFD: Int32
    private let draining = Mutex(false)

    public init(executable: String, arguments: [String]) throws {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            throw SpawnError(description: "pipe failed: \(String(cString: strerror(errno)))")
        }
        // Not inherited by other children spawned meanwhile, which would keep the pipe open past our child's exit.
        _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
        var child: pid_t = 0
        let status = Self.spawn(&child, executable, arguments, stdout: nil, stderr: pipeFDs[1])
        close(pipeFDs[1])
        guard status == 0 else {
            close(pipeFDs[0])
            throw SpawnError(description: "could not start \(executable): \(String(cString: strerror(status)))")
        }
        pid = child
        stderrFD = pipeFDs[0]
    }

    /// Reads stderr until a line contains `marker` (true) or the process closes stderr or `timeoutMs` passes
    /// (false). Returns what was read either way.
    ///
    /// The wait blocks a thread of its own, never one of the few that run Swift tasks: tests starting processes in
    /// parallel would otherwise stall every other test's tasks while they wait.
    public func waitForStderr(containing marker: String, timeoutMs: Int32 = 10_000) async -> (found: Bool, output: String) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                continuation.resume(returning: waitForStderrBlocking(containing: marker, timeoutMs: timeoutMs))
            }
        }
    }

    private func waitForStderrBlocking(containing marker: String, timeoutMs: Int32) -> (found: Bool, output: String) {
        var output = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !output.contains(marker) {
            var descriptor = pollfd(fd: stderrFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, timeoutMs)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return (false, output) }
            let count = read(stderrFD, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return (false, output) }
            output += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        return (true, output)
    }

    /// From now on, reads stderr on a thread of its own until the process closes it, so a chatty process never
    /// blocks on a full pipe, keeping only its last ``stderrTailLimit`` bytes for ``stderrTail(timeoutMs:)``. Call at
    /// most once, after the last ``waitForStderr(containing:timeoutMs:)``.
    public func discardStderr() {
        let descriptor = stderrFD
        drained.enter()
        // The thread holds the process object until stderr closes, which its exit does.
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                self.tail.withLock { tail in
                    tail += buffer[0..<count]
                    if tail.count > Self.stderrTailLimit { tail.removeFirst(tail.count - Self.stderrTailLimit) }
                }
            }
            close(descriptor)
            self.drained.leave()
        }
        draining.withLock { $0 = true }
    }

    /// How much of stderr ``discardStderr()`` keeps: the end, where a crash's report is.
    public static let stderrTailLimit = 64 * 1024

    /// The last bytes the process wrote to stderr after ``discardStderr()``: what a failing test shows of a process
    /// that died (its crash report). Waits up to `timeoutMs` for the process to close stderr (its exit does), so that
    /// everything written is in.
    public func stderrTail(timeoutMs: Int = 2_000) -> String {
        _ = drained.wait(timeout: .now() + .milliseconds(timeoutMs))
        return tail.withLock { String(decoding: $0, as: UTF8.self) }
    }

    /// The end of stderr, as ``discardStderr()`` reads it.
    private let tail = Mutex<[UInt8]>([])
    /// Entered by ``discardStderr()``, left when its thread has read stderr to its end.
    private let drained = DispatchGroup()

    /// Sends `signal` and waits for the process to exit. A process still running `graceMs` later is killed with
    /// SIGKILL, so a child that hangs in its shutdown fails its test rather than hanging the whole run. Once: later
    /// calls return the first result (the pid may belong to another process by then).
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, graceMs: Int = 10_000) -> Termination {
        stopped.withLock { stopped in
            if let stopped { return stopped }
            let termination = terminate(signal: signal, graceMs: graceMs)
            stopped = termination
            return termination
        }
    }

    private let stopped = Mutex<Termination?>(nil)

    private func terminate(signal: Int32, graceMs: Int) -> Termination {
        kill(pid, signal)
        var status: Int32 = 0
        var waited = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || (reaped < 0 && errno != EINTR) { break }
            if waited >= graceMs {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                break
            }
            usleep(5_000)
            waited += 5
        }
        // The drain thread reads until EOF, which the exit just caused; it must not race a reused fd number.
        if !draining.withLock({ $0 }) { close(stderrFD) }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as functions.
        return status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signaled(status & 0x7F)
    }

    /// `posix_spawn` with stdin from /dev/null, stdout to `stdout` (or /dev/null), stderr to `stderr`, an empty
    /// signal mask and default handling of SIGTERM, SIGPIPE and SIGINT. Returns posix_spawn's status.
    private static func spawn(_ pid: inout pid_t, _ executable: String, _ arguments: [String], stdout: Int32?, stderr: Int32) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdout {
            posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Nothing else crosses into the child. SwiftNIO and c-ares open their sockets without FD_CLOEXEC, so a
        // child spawned while a parallel test holds a connection would otherwise keep that connection open after
        // the test closes it, and a server waiting for its clients to leave (a graceful shutdown) would wait for
        // ever.
        guard let closeFrom = addCloseFrom else { return ENOSYS }
        let closing = closeFrom(&actions, 3)
        guard closing == 0 else { return closing }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGINT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        return posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// import: looked up once, by name.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(
            symbol,
            to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self
        )
    }()

    /// Finds `name` in PATH, /usr/sbin or /sbin.
    public static func find(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}

extension ChildProcess {
    /// How a process run by ``run(executable:arguments:timeoutMs:)`` ended.
    public enum Termination: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        public var description: String {
            switch self {
            case .exited(let code): "exit code \(code)"
            case .signaled(let signal): "killed by signal \(signal)"
            }
        }
    }

    /// What a process run to completion printed, and how it ended.
    public struct Completion: Sendable, CustomStringConvertible {
        public let status: Termination
        public let stdout: String
        public let stderr: String
        /// The process outlived the timeout and was killed with SIGKILL.
        public let timedOut: Bool
        /// The most memory the process held at once (its peak resident set), in KiB, as the kernel reports it to
        /// `wait4`.
        public let maxResidentKiB: Int

        public var description: String {
            "\(status)\(timedOut ? " (timed out)" : "")\n--- stdout ---\n\(stdout)\n--- stderr ---\n\(stderr)"
        }
    }

    /// Runs `executable` with stdin from /dev/null, reads its stdout and stderr to the end (polling both pipes, so a
    /// process filling one pipe while we wait on the other cannot deadlock), and reaps it. A process still running
    /// after `timeoutMs` is killed with SIGKILL, so a hanging process fails the test instead of hanging it.
    ///
    /// Runs on a thread of its own: the blocking reads and `waitpid` never hold a Swift concurrency thread.
    public static func run(executable: String, arguments: [String], timeoutMs: Int = 30_000) async throws -> Completion {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        try runBlocking(executable: executable, arguments: arguments, timeoutMs: timeoutMs)
                    }
                )
            }
        }
    }

    /// A one-way channel whose both ends are close-on-exec from the start: a child spawned by a parallel test between
    /// `pipe()` and `fcntl()` would otherwise inherit the write end and keep it open, and the reader would never see
    /// end-of-file. Swift's Glibc module does not import `pipe2`, so this is a socket pair made with `SOCK_CLOEXEC`.
    private static func makeCloseOnExecPipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw SpawnError(description: "socketpair failed: \(String(cString: strerror(errno)))")
        }
        shutdown(fds[0], Int32(SHUT_WR))
        shutdown(fds[1], Int32(SHUT_RD))
        return (fds[0], fds[1])
    }

    private static func monotonicMilliseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
    }

    private static func runBlocking(executable: String, arguments: [String], timeoutMs: Int) throws -> Completion {
        let out = try makeCloseOnExecPipe()
        let err: (read: Int32, write: Int32)
        do {
            err = try makeCloseOnExecPipe()
        } catch {
            close(out.read)
            close(out.write)
            throw error
        }

        var pid: pid_t = 0
        let spawned = Self.spawn(&pid, executable, arguments, stdout: out.write, stderr: err.write)
        close(out.write)
        close(err.write)
        guard spawned == 0 else {
            close(out.read)
            close(err.read)
            throw SpawnError(description: "could not start \(executable): \(String(cString: strerror(spawned)))")
        }

        // Index 0 is stdout, 1 is stderr; a descriptor becomes -1 (ignored by poll) once it reaches end-of-file.
        var descriptors = [
            pollfd(fd: out.read, events: Int16(POLLIN), revents: 0),
            pollfd(fd: err.read, events: Int16(POLLIN), revents: 0),
        ]
        var captured: [[UInt8]] = [[], []]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var deadline = monotonicMilliseconds() + timeoutMs
        var timedOut = false
        while descriptors.contains(where: { $0.fd >= 0 }) {
            let remaining = deadline - monotonicMilliseconds()
            if remaining <= 0 {
                if timedOut { break }  // Killed, yet a pipe stays open (a grandchild holds it): stop reading.
                timedOut = true
                kill(pid, SIGKILL)
                deadline = monotonicMilliseconds() + 2_000
                continue
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(remaining))
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { break }
            for index in descriptors.indices where descriptors[index].fd >= 0 && descriptors[index].revents != 0 {
                let count = read(descriptors[index].fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    close(descriptors[index].fd)
                    descriptors[index].fd = -1
                } else {
                    captured[index] += buffer[0..<count]
                }
            }
        }
        for descriptor in descriptors where descriptor.fd >= 0 { close(descriptor.fd) }

        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG are C macros Swift does not import.
        let termination: Termination = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signaled(status & 0x7F)
        return Completion(
            status: termination,
            stdout: String(decoding: captured[0], as: UTF8.self),
            stderr: String(decoding: captured[1], as: UTF8.self),
            timedOut: timedOut,
            maxResidentKiB: usage.ru_maxrss
        )
    }
}
