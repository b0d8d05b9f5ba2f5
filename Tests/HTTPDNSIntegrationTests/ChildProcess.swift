import Foundation
import Glibc
import Synchronization

/// A process a test starts and must stop: spawned with `posix_spawn`, stderr captured through a pipe.
///
/// Foundation's `Process` is not used: it spawns from a Dispatch worker thread whose signal mask blocks SIGTERM
/// (the child inherits it), and it reaps children one blocking `wait4` at a time, which hangs when tests start
/// servers in parallel. Here the child starts with an empty signal mask and is reaped by its own `waitpid`.
final class ChildProcess: Sendable {
    struct SpawnError: Error, CustomStringConvertible {
        let description: String
    }

    let pid: pid_t
    private let stderrFD: Int32
    private let draining = Mutex(false)

    init(executable: String, arguments: [String]) throws {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            throw SpawnError(description: "pipe failed: \(String(cString: strerror(errno)))")
        }
        // Not inherited by other children spawned meanwhile, which would keep the pipe open past our child's exit.
        _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 2)

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
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
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
    func waitForStderr(containing marker: String, timeoutMs: Int32 = 10_000) -> (found: Bool, output: String) {
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

    /// From now on, reads and discards stderr on a thread of its own until the process closes it, so a chatty
    /// process never blocks on a full pipe. Call at most once, after the last ``waitForStderr(containing:timeoutMs:)``.
    func discardStderr() {
        let descriptor = stderrFD
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
            }
            close(descriptor)
        }
        draining.withLock { $0 = true }
    }

    /// Sends `signal` and waits for the process to exit.
    func stop(signal: Int32 = SIGTERM) {
        kill(pid, signal)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // The drain thread reads until EOF, which the exit just caused; it must not race a reused fd number.
        if !draining.withLock({ $0 }) { close(stderrFD) }
    }

    /// Finds `name` in PATH, /usr/sbin or /sbin.
    static func find(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
