import FuzzDriver
import HTTPDNSInterceptor

/// Requests as the interceptor normalises them (docs/CANONICAL-REQUEST.md): the first line is the URL, the rest are
/// header fields `name: value`. Both modes (standard and apple). An error is expected; a crash, a hang or a leak is a finding. A
/// canonical request, normalised again, must be itself: normalising is idempotent.
runFuzzer { start, count in
    let text = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let url = lines.isEmpty ? "" : lines.removeFirst()
    let headers = lines.map { line -> CanonicalRequest.Header in
        let colon = line.firstIndex(of: ":") ?? line.endIndex
        return CanonicalRequest.Header(String(line[..<colon]), String(line[colon...].dropFirst()))
    }
    for mode in [CanonicalRequest.Configuration.Mode.standard, .apple] {
        let configuration = CanonicalRequest.Configuration(mode: mode)
        guard let request = try? CanonicalRequest.normalize(method: "GET", url: url, headers: headers, configuration: configuration) else { continue }
        let again = try? CanonicalRequest.normalize(method: "GET", url: request.url, headers: Array(request.headers), configuration: configuration)
        if again?.url != request.url {
            fatalError("normalising \(url.debugDescription) twice gave \(request.url.debugDescription), then \(String(describing: again?.url))")
        }
    }
    return 0
}
