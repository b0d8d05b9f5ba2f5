import FuzzDriver
@_spi(Fuzzing) import HTTPDNSServer

/// Query parameters, read two ways: by the cache-hit paths' own reader and by Hummingbird's `URI`, which the router
/// uses. The input is a request target (made to start with "/"); for every target the hit paths would answer (path
/// `/d` or `/dns-query`), the path and every name's first value must be the same both ways. A difference is a
/// finding: a hit and a miss would read one request two ways.
runFuzzer { start, count in
    let target = "/" + String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    if let difference = ServiceFuzzing.queryParametersDiffer(target) { fatalError(difference) }
    return 0
}
