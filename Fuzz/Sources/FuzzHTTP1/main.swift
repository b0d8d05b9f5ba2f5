import FuzzDriver
@_spi(Fuzzing) import HTTPDNSServer

/// Bytes from a client into the service's HTTP/1.1 pipeline (request decoder, front, cache hits, query
/// parameters of every route answered there), as they arrive after TLS. A crash, a hang or a leak is a finding.
let service = try! ServiceFuzzing()

runFuzzer { start, count in
    service.http1(UnsafeRawBufferPointer(start: start, count: count))
    return 0
}
