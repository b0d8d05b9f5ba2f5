import ArgumentParser
import AsyncHTTPClient
import Foundation
import HTTPDNSCommandLine
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSSettings
import HTTPDNSURLSession
import HTTPDNSWire
import NIOCore
import NIOHTTP1
import NIOSSL

/// `httpdns fetch URL`: a request through the interceptor, the body to stdout as with curl.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch a URL through the interceptor: resolved by HTTPDNS, sent to the address with the real name kept.",
        discussion: """
            The host is resolved through the policy (with a service, --server or HTTPDNS_SERVERS: the HTTPDNS \
            service first, then the fallbacks; without: c-ares alone), and the request is sent to its addresses \
            with the URL's name in the Host header, TLS SNI and the certificate check; --cacert is trusted for the \
            origin too. Redirects are followed through the same pipeline. --dry-run prints \
            the canonical request and sends nothing. Exit codes: 0 a response arrived (any status); 1 the request \
            failed (resolution, connection, certificate or timeout); 2 bad input.
            """
    )

    @Argument(help: "The URL, http or https.")
    var url: String

    /// `--cacert` is trusted for the origin too, with or without a service (see ``readSettings()``).
    @OptionGroup var service: ServiceOptions

    @OptionGroup var timing: ServiceTimingOptions

    @OptionGroup var fallback: FallbackOptions

    @OptionGroup var dns: DNSOptions

    @Option(name: [.customShort("X"), .customLong("request")], help: "The method (default GET, or POST with -d).")
    var method: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header, 'Name: value'; repeatable.")
    var headers: [String] = []

    @Option(name: [.customShort("d"), .customLong("data")], help: "A request body.")
    var data: String?

    @Flag(name: .customShort("v"), help: "Write the canonical request, the address, SNI, Host, response head and storage policy to stderr.")
    var verbose = false

    @Flag(name: .customLong("dry-run"), help: "Print the canonical request; resolve and send nothing.")
    var dryRun = false

    @Option(name: .customLong("compat"), help: "apple: the reference behaviour of both specs (default: standard).")
    var compat: String?

    @Option(help: "asynchttpclient (the default) or urlsession: the adapter the request goes through.")
    var adapter: String?

    @Option(name: .customLong("max-redirects"), help: "Redirects followed (default 10; 0 prints the redirect itself).")
    var maxRedirects: Int?

    @Option(name: .customLong("timeout-ms"), help: "Until the response head arrives, redirects included (default 30000).")
    var timeoutMs: Int?

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        var configuration = CanonicalRequest.Configuration()
        switch compat {
        case nil: break
        case "apple": configuration.mode = .apple
        case let other?: throw usage("--compat takes apple, not '\(other)'")
        }
        // What the transport decodes for the caller (AsyncHTTPClient's decompression), so nothing undecoded.
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
        if let maxRedirects, maxRedirects < 0 { throw usage("--max-redirects takes 0 or more, not \(maxRedirects)") }
        if let timeoutMs, timeoutMs <= 0 || timeoutMs > 86_400_000 {
            throw usage("--timeout-ms takes a positive number of milliseconds up to a day, not \(timeoutMs)")
        }
        let useURLSession: Bool
        switch adapter {
        case nil, "asynchttpclient": useURLSession = false
        case "urlsession": useURLSession = true
        case let other?: throw usage("--adapter takes asynchttpclient or urlsession, not '\(other)'")
        }
        // Read, and so checked, with --dry-run too: it refuses what sending would.
        let settings = try await readSettings()
        guard dryRun else {
            try await send(canonical, settings: settings, fields: fields, canonicalConfiguration: configuration, urlSession: useURLSession)
            return
        }
        // As sent: the Host header first, then the request's fields and the defaults.
        let sent = [CanonicalRequest.Header("Host", canonical.hostHeader)] + canonical.headers
        if json {
            let merged = Self.merged(sent)
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

    /// Resolves, sends and prints. A failed request ends with exit code 1, a refused configuration with 2.
    private func send(
        _ canonical: CanonicalRequest,
        settings: ResolveSettings,
        fields: [CanonicalRequest.Header],
        canonicalConfiguration: CanonicalRequest.Configuration,
        urlSession: Bool
    ) async throws {
        // A closed stdout (`| head`) is a write error that ends the request with exit code 1, not a signal.
        signal(SIGPIPE, SIG_IGN)
        let sources: Sources
        var interception = InterceptingHTTPClient.Configuration()
        interception.canonical = canonicalConfiguration
        interception.decompression = true
        interception.storagePolicy.mode = canonicalConfiguration.mode == .apple ? .apple : .standard
        interception.families = settings.families
        if let maxRedirects { interception.maxRedirects = maxRedirects }
        let client: InterceptingHTTPClient
        do {
            if let cacert = service.cacert {
                let certificates = try NIOSSLCertificate.fromPEMFile(cacert)
                guard !certificates.isEmpty else { throw usage("--cacert: \(cacert) holds no certificate") }
                interception.tls.additionalTrustRoots = [.certificates(certificates)]
            }
            sources = try await Sources.make(settings)
        } catch let error as ExitCode {
            throw error
        } catch {
            throw usage("\(error)")
        }
        do {
            client = try InterceptingHTTPClient(resolver: try sources.hostResolver(), configuration: interception)
        } catch {
            await sources.shutdown()
            throw usage("\(error)")
        }
        let outcome: Result<Void, InterceptorError>
        do {
            try await exchange(canonical, fields: fields, client: client, urlSession: urlSession)
            outcome = .success(())
        } catch let error as InterceptorError {
            outcome = .failure(error)
        } catch {
            outcome = .failure(InterceptorError(.transportFailed, "\(error)"))
        }
        await client.shutdown()
        await sources.shutdown()
        if case .failure(let error) = outcome {
            Output.diagnostic("httpdns fetch: \(error.message)")
            // A request that cannot be sent as given is bad input; anything else is the request failing.
            throw ExitCode(error.code == .invalidRequest ? ExitStatus.usage : ExitStatus.negative)
        }
    }

    /// One request and its response, printed: the body to stdout as it arrives (or in the JSON object), the rest
    /// to stderr with -v.
    private func exchange(_ canonical: CanonicalRequest, fields: [CanonicalRequest.Header], client: InterceptingHTTPClient, urlSession: Bool) async throws {
        var headers = HTTPHeaders()
        for field in fields { headers.add(name: field.name, value: field.value) }
        let timeout = Duration.milliseconds(timeoutMs ?? 30_000)
        let head: FetchedHead
        let body: HTTPClientResponse.Body
        if urlSession {
            let (urlSessionHead, pieces) = try await URLSessionFetch.run(
                method: canonical.method, url: url, headers: fields, data: data, client: client, timeout: timeout
            )
            (head, body) = (urlSessionHead, .stream(pieces))
        } else {
            let response = try await client.execute(
                method: canonical.method, url: url, headers: headers, body: data.map { ByteBuffer(string: $0) }, timeout: timeout
            )
            head = FetchedHead(
                status: Int(response.response.status.code),
                reason: response.response.status.reasonPhrase,
                headers: response.response.headers.map { ($0.name, $0.value) },
                request: response.request,
                connectedAddress: response.connectedAddress,
                policy: response.cacheStoragePolicy
            )
            // Read straight from AsyncHTTPClient, so its back pressure holds when stdout is slow.
            body = response.response.body
        }
        if verbose {
            let sent = head.request
            var lines = ["> \(sent.method) \(sent.url)", "> Host: \(sent.hostHeader)"]
            lines += sent.headers.map { "> \($0.name): \($0.value)" }
            lines.append("* connected to \(head.connectedAddress.map(\.description) ?? "(passed as given)"), SNI \(sent.host)")
            lines.append("< \(head.status) \(head.reason)")
            lines += head.headers.map { "< \($0.0): \($0.1)" }
            lines.append("* cache storage policy: \(head.policy.rawValue)")
            Output.diagnostic(lines.joined(separator: "\n"))
        }
        guard json else {
            // Each piece straight from its buffer, without a copy.
            for try await piece in body where piece.readableBytes > 0 { try Output.writeStdout(piece) }
            return
        }
        // The body in the object when it is UTF-8 text of at most 1 MiB; else only its size.
        let limit = 1 << 20
        var kept: [UInt8] = []
        var count = 0
        for try await piece in body {
            count += piece.readableBytes
            if count <= limit { kept += piece.readableBytesView }
        }
        var members: [(String, JSON)] = [
            ("method", .string(head.request.method)),
            ("url", .string(head.request.url)),
            ("headers", .object(Self.merged([.init("Host", head.request.hostHeader)] + head.request.headers).map { ($0.0, JSON.string($0.1)) })),
            ("status", .integer(head.status)),
            ("connectedAddress", head.connectedAddress.map { .string($0.description) } ?? .null),
            ("serverName", .string(head.request.host)),
            ("responseHeaders", .object(Self.merged(head.headers.map { .init($0.0, $0.1) }).map { ($0.0, JSON.string($0.1)) })),
            ("cacheStoragePolicy", .string(head.policy.rawValue)),
        ]
        if count <= limit, let text = String(validating: kept, as: UTF8.self) {
            members.append(("body", .string(text)))
        } else {
            members.append(("bodyBytes", .integer(count)))
        }
        print(JSON.object(members).text)
    }

    /// One member per name: a field given more than once is its values joined, as HTTP lists are.
    static func merged(_ headers: [CanonicalRequest.Header]) -> [(String, String)] {
        var merged: [(String, String)] = []
        for header in headers {
            if let index = merged.firstIndex(where: { $0.0.lowercased() == header.name.lowercased() }) {
                merged[index].1 += ", " + header.value
            } else {
                merged.append((header.name, header.value))
            }
        }
        return merged
    }

    /// The settings only the service uses, in the order an error names them.
    private static let serviceSettings = [
        ResolveSettings.serverName, ResolveSettings.cacert, ResolveSettings.pins, ResolveSettings.fallbacks, ResolveSettings.budgetMs,
        ResolveSettings.attemptTimeoutMs,
    ]

    /// The resolver's settings from the flags over the environment over the file, as `resolve` reads them, but for
    /// the source: with a service (`--server`, `servers`, `HTTPDNS_SERVERS`) it is asked first and the fallbacks
    /// after it (`auto`), without one c-ares resolves alone. `source` (`HTTPDNS_SOURCE`) is not read.
    private func readSettings() async throws -> ResolveSettings {
        var flags: [String: [String]] = [:]
        service.add(to: &flags)
        // --cacert is set below, once it is known whether there is a service.
        flags[ResolveSettings.cacert.key] = nil
        timing.add(to: &flags)
        fallback.add(to: &flags)
        dns.add(to: &flags)
        let environment = ProcessInfo.processInfo.environment
        let file = environment["HTTPDNS_CONFIG"]
        do {
            let layers = try SettingsReader(settings: ResolveSettings.table, file: file, environment: environment, flags: flags)
            let hasService = !(try await layers.strings(ResolveSettings.servers) ?? []).isEmpty
            if !hasService {
                // What only the service uses, set with no service to use it: refused, naming where each was set.
                var stray: [Setting] = []
                for setting in Self.serviceSettings where try await layers.isSet(setting) { stray.append(setting) }
                if !stray.isEmpty {
                    let named = stray.map { "\($0.flag ?? $0.key) (\($0.key), \($0.environmentVariable))" }
                    throw usage(
                        "\(named.joined(separator: ", ")) concern the HTTPDNS service, and none is set: "
                            + "name one with --server (servers, HTTPDNS_SERVERS)"
                    )
                }
            }
            flags[ResolveSettings.source.key] = [hasService ? "auto" : "cares"]
            // --cacert is the service's too when there is one; without one, it is for the origin alone.
            if hasService, let cacert = service.cacert { flags[ResolveSettings.cacert.key] = [cacert] }
            let reader = try SettingsReader(settings: ResolveSettings.table, file: file, environment: environment, flags: flags)
            return try await ResolveSettings(reading: reader)
        } catch let error as ExitCode {
            throw error
        } catch {
            throw usage("\(error)")
        }
    }

    private func usage(_ message: String) -> ExitCode {
        Output.diagnostic("httpdns fetch: \(message)")
        return ExitCode(ExitStatus.usage)
    }
}

/// What `fetch` prints of a response, whichever adapter brought it.
struct FetchedHead {
    var status: Int
    var reason: String
    var headers: [(String, String)]
    var request: CanonicalRequest
    var connectedAddress: IPAddress?
    var policy: CacheStoragePolicy
}
