import FuzzDriver
@_spi(Fuzzing) import HTTPDNSServer

/// Bytes from a client into the service's HTTP/1.1 pipeline (request decoder, front, cache hits and the
/// query parameters of their routes), as they arrive after TLS. A crash or a hang is a finding (run without LeakSanitizer: see scripts/fuzz.sh).
let service = try! ServiceFuzzing()

runFuzzer { start, count in
    service.http1(UnsafeRawBufferPointer(start: start, count: count))
    return 0
}
