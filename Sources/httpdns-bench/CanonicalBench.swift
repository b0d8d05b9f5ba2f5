import ArgumentParser
import Foundation
import HTTPDNSInterceptor
import HTTPDNSWire

/// Canonicalisation and storage-policy decisions, against parsing and re-serialising the same URLs with Foundation's
/// `URLComponents`.
struct CanonicalBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canonical",
        abstract: "ns per canonical request and per storage-policy decision, as ratios against a URLComponents round trip."
    )

    @Option(help: "Calls per round.")
    var calls = 500_000

    @Option(help: "Rounds, the three in turn; the median is reported.")
    var rounds = 7

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard calls > 0, rounds > 0 else { throw ValidationError("counts must be positive") }
    }

    /// URLs as backends send them: most already canonical, some with a default port, escapes, dot segments, capitals.
    static let urls = [
        "https://api.example.com/v1/users/42?fields=name,email",
        "https://cdn.example.net/assets/app.js",
        "http://Example.COM:80/a/./b/../c?q=%7e",
        "https://search.example.org/?q=swift%20on%20server&page=2",
        "https://api.example.com/v1/orders",
        "https://user@files.example.com:8443/dir/file.txt#part",
        "https://[2001:DB8::1]/status",
        "https://static.example.com/img/logo.png",
    ]

    func run() async throws {
        let urls = Self.urls
        let (calls, count) = (self.calls, urls.count)
        let headers = [CanonicalRequest.Header("User-Agent", "bench")]
        let responseHeaders: [(name: String, value: String)] = [("Content-Type", "application/json"), ("Cache-Control", "max-age=60, public")]
        func time(_ body: () throws -> Int) rethrows -> Double {
            let stopwatch = Stopwatch()
            let total = try body()
            precondition(total > 0)
            return Double(stopwatch.elapsedNanoseconds) / Double(calls)
        }
        func foundation() -> Int {
            var total = 0
            for index in 0..<calls {
                total &+= URLComponents(string: urls[index % count])?.string?.utf8.count ?? 0
            }
            return total
        }
        func canonical() throws -> Int {
            var total = 0
            for index in 0..<calls {
                // The URL and every field, the defaults added among them, read as the pipeline reads them.
                guard let request = try CanonicalRequest.normalize(method: "GET", url: urls[index % count], headers: headers) else { continue }
                total &+= request.url.utf8.count
                for field in request.headers { total &+= field.value.utf8.count }
            }
            return total
        }
        func policy() -> Int {
            var total = 0
            for index in 0..<calls {
                let decided = CacheStoragePolicy.decide(
                    method: "GET", scheme: index & 1 == 0 ? "https" : "http", requestHeaders: [], status: 200, responseHeaders: responseHeaders
                )
                total &+= decided == .notAllowed ? 1 : 2
            }
            return total
        }
        _ = time(foundation)
        _ = try time(canonical)
        _ = time(policy)
        var samples: [[Double]] = [[], [], []]
        for _ in 0..<rounds {
            samples[0].append(time(foundation))
            samples[1].append(try time(canonical))
            samples[2].append(time(policy))
        }
        let (baseline, canonicalNs, policyNs) = (samples[0].median, samples[1].median, samples[2].median)
        if json {
            print(
                JSON.object([
                    ("benchmark", .string("canonical")),
                    ("urlComponentsNsPerCall", .number(baseline)),
                    ("canonicalNsPerCall", .number(canonicalNs)), ("canonicalRatio", .number(canonicalNs / baseline)),
                    ("policyNsPerCall", .number(policyNs)), ("policyRatio", .number(policyNs / baseline)),
                ]).text
            )
        } else {
            print("\(urls.count) URLs in turn, median of \(rounds) interleaved rounds of \(calls) calls")
            print("  URLComponents parse and string: \(formatted(baseline)) ns")
            print("  CanonicalRequest.normalize:     \(formatted(canonicalNs)) ns, ratio \(formatted(canonicalNs / baseline))x")
            print("  CacheStoragePolicy.decide:      \(formatted(policyNs)) ns, ratio \(formatted(policyNs / baseline))x")
            print("  target: each at most 1.50x")
        }
    }
}
