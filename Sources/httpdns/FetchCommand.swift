import ArgumentParser
import HTTPDNSInterceptor
import HTTPDNSWire

/// `httpdns fetch URL`: a request through the interceptor. Built so far: `--dry-run`, which prints the canonical
/// request and sends nothing.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch a URL through the interceptor (for now: --dry-run prints the canonical request).",
        discussion: """
            With --dry-run, prints the request as the interceptor would send it: the canonical URL, the Host header and \
            the header defaults (docs/INTERCEPTOR.md), without resolving or sending anything. Exit codes: 0 printed; \
            2 bad input. Sending is not built yet (issue 10).
            """
    )

    @Argument(help: "The URL, http or https.")
    var url: String

    @Option(name: [.customShort("X"), .customLong("request")], help: "The method (default GET, or POST with -d).")
    var method: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header, 'Name: value'; repeatable.")
    var headers: [String] = []

    @Option(name: [.customShort("d"), .customLong("data")], help: "A request body.")
    var data: String?

    @Flag(name: .customLong("dry-run"), help: "Print the canonical request; resolve and send nothing.")
    var dryRun = false

    @Option(name: .customLong("compat"), help: "apple: the reference behaviour of both specs (default: standard).")
    var compat: String?

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        var configuration = CanonicalRequest.Configuration()
        switch compat {
        case nil: break
        case "apple": configuration.mode = .apple
        case let other?: throw usage("--compat takes apple, not '\(other)'")
        }
        // What the transport will decode for the caller (AsyncHTTPClient's decompression), so nothing undecoded.
        configuration.decodedEncodings = ["gzip", "deflate"]
        var fields: [CanonicalRequest.Header] = []
        for header in headers {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                throw usage("-H takes 'Name: value', not '\(header)'")
            }
            let name = String(header[..<colon])
            guard name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }) else {
                throw usage("'\(name)' is not a header name")
            }
            fields.append(.init(name, String(header[header.index(after: colon)...].drop { $0 == " " || $0 == "\t" })))
        }
        let method = self.method ?? (data == nil ? "GET" : "POST")
        guard !method.isEmpty, method.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw usage("'\(method)' is not a method") }
        let canonical: CanonicalRequest
        do {
            guard let request = try CanonicalRequest.normalize(method: method, url: url, headers: fields, hasBody: data != nil, configuration: configuration)
            else { throw usage("'\(url)' is not an http or https URL: the interceptor takes only those") }
            canonical = request
        } catch let error as CanonicalRequestError {
            throw usage("\(error)")
        }
        guard dryRun else {
            throw usage("sending requests is not built yet (issue 10): --dry-run prints the canonical request")
        }
        // As sent: the Host header first, then the request's fields and the defaults.
        let sent = [CanonicalRequest.Header("Host", canonical.hostHeader)] + canonical.headers
        if json {
            // One member per name: a field given more than once is its values joined, as HTTP lists are.
            var merged: [(String, String)] = []
            for header in sent {
                if let index = merged.firstIndex(where: { $0.0.lowercased() == header.name.lowercased() }) {
                    merged[index].1 += ", " + header.value
                } else {
                    merged.append((header.name, header.value))
                }
            }
            print(
                JSON.object([
                    ("method", .string(canonical.method)),
                    ("url", .string(canonical.url)),
                    ("headers", .object(merged.map { ($0.0, JSON.string($0.1)) })),
                ]).text
            )
        } else {
            print("\(canonical.method) \(canonical.url)")
            for header in sent { print("\(header.name): \(header.value)") }
        }
    }

    private func usage(_ message: String) -> ExitCode {
        Output.diagnostic("httpdns fetch: \(message)")
        return ExitCode(ExitStatus.usage)
    }
}
