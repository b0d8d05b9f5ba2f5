import FuzzDriver
import Dispatch
@_spi(Fuzzing) import HTTPDNSServer

/// Bytes from a client into the service's own HTTP/2 connection, with its router behind it, as they arrive after
/// TLS. Each input runs until the connection has closed and every task it started has ended. A crash, a hang, or a
/// broken invariant once it has closed (body bytes or router work still counted) is a finding; it runs without
/// LeakSanitizer (see scripts/fuzz.sh). Seeded with swift-nio-http2's own fuzz fail cases.
let service = try! ServiceFuzzing()

runFuzzer { start, count in
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let done = DispatchSemaphore(value: 0)
    // Detached: top-level code is the main actor's, and the main thread waits below.
    Task.detached {
        if let broken = await service.http2(bytes) { fatalError(broken) }
        done.signal()
    }
    done.wait()
    return 0
}
