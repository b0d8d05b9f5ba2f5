import FuzzDriver
import HTTPDNSWire

/// The native API's JSON as its client reads it: a single answer, a batch answer, and an error body. A format
/// error is expected; a crash, a hang or a leak is a finding.
runFuzzer { start, count in
    let bytes = UnsafeBufferPointer(start: start, count: count)
    _ = try? NativeAnswer(parsingJSON: bytes)
    _ = try? NativeBatchAnswer(parsingJSON: bytes)
    _ = try? NativeErrorBody(parsingJSON: bytes)
    return 0
}
