import FuzzDriver
import HTTPDNSInterceptor

/// Cache-Control field values as the storage policy reads a response's: one line, and the same bytes split into
/// several lines at commas. A parse error is expected; a crash, a hang or a leak is a finding.
runFuzzer { start, count in
    let text = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    _ = try? CacheControl(parsing: text)
    _ = try? CacheControl(parsing: text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
    return 0
}
