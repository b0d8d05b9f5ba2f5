import Foundation
import FoundationNetworking
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSSynchronization
import HTTPDNSTesting
import HTTPDNSURLSession
import NIOSSL
import Testing

/// The URLSession adapter against nginx: the ways backend code uses URLSession on Linux — `data(for:)`,
/// completion-handler tasks, a data delegate reading pieces, and `httpBodyStream` uploads — each through the
/// interceptor, with the names kept. One suite, serialised: the protocol is installed once per process.
@Suite("The URLSession adapter against nginx", .serialized, .timeLimit(.minutes(2)))
struct URLSessionAdapterTests {
    static func withSession(
        streaming: Bool = false,
        _ body: (URLSession, InterceptorAgainstNginxTests.Stage, URLCache) async throws -> Void
    ) async throws {
        try await InterceptorAgainstNginxTests.withStage { stage in
            let configuration = URLSessionConfiguration.ephemeral
            let cache = URLCache(memoryCapacity: 4 << 20, diskCapacity: 0, diskPath: nil)
            configuration.urlCache = cache
            try HTTPDNSURLProtocol.install(stage.client, into: configuration, streaming: streaming)
            defer { HTTPDNSURLProtocol.uninstall() }
            #expect(configuration.protocolClasses?.first == (streaming ? HTTPDNSStreamingURLProtocol.self : HTTPDNSURLProtocol.self))
            let session = URLSession(configuration: configuration)
            defer { session.finishTasksAndInvalidate() }
            try await body(session, stage, cache)
        }
    }

    @Test func dataForARequestKeepsTheNameAndFollowsRedirects() async throws {
        try await Self.withSession { session, stage, cache in
            let (data, response) = try await session.data(for: URLRequest(url: URL(string: stage.url("a.test", "/redirect/302/b.test/final"))!))
            #expect(String(decoding: data, as: UTF8.self) == "sni=b.test host=b.test:\(stage.origin.port)\n")
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 200)
            #expect(http.url?.absoluteString == stage.url("b.test", "/final"), "the last hop's URL")
            // Stored into the configuration's cache by the adapter (URLSession does not for custom protocols), under
            // the URL that answered.
            let cached = cache.cachedResponse(for: URLRequest(url: URL(string: stage.url("b.test", "/final"))!))
            #expect(cached.map { String(decoding: $0.data, as: UTF8.self) } == "sni=b.test host=b.test:\(stage.origin.port)\n")
            #expect(cached?.storagePolicy == .allowedInMemoryOnly)
        }
    }

    /// URLSession does not store a custom protocol's cookies; the adapter does, into the configuration's storage, and
    /// sends them back.
    @Test func cookiesGoToTheConfigurationsStorageAndBack() async throws {
        try await Self.withSession { session, stage, _ in
            _ = try await session.data(from: URL(string: stage.url("a.test", "/set-cookie"))!)
            let cookies = session.configuration.httpCookieStorage?.cookies(for: URL(string: stage.url("a.test", "/"))!) ?? []
            #expect(cookies.map(\.name) == ["session"])
            let (data, _) = try await session.data(from: URL(string: stage.url("a.test", "/cookie"))!)
            #expect(String(decoding: data, as: UTF8.self) == "cookie=session=abc\n")
            let (other, _) = try await session.data(from: URL(string: stage.url("b.test", "/cookie"))!)
            #expect(String(decoding: other, as: UTF8.self) == "cookie=\n", "another host's cookies are its own")
        }
    }

    @Test func aCompletionHandlerGetsTheWholeBody() async throws {
        try await Self.withSession { session, stage, _ in
            let result: (Data?, URLResponse?, (any Error)?) = await withCheckedContinuation { continuation in
                let url = URL(string: stage.url("a.test", "/large"))!
                session.dataTask(with: url) { data, response, error in
                    continuation.resume(returning: (data, response, error))
                }.resume()
            }
            #expect(result.2 == nil, "\(String(describing: result.2))")
            #expect(result.0?.count == NginxServer.largeFileBytes, "every piece, not the last")
        }
    }

    @Test func aDataDelegateReadsPiecesAsTheyArrive() async throws {
        try await Self.withSession(streaming: true) { session, stage, _ in
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = session.configuration.urlCache
            configuration.httpCookieStorage = session.configuration.httpCookieStorage
            try HTTPDNSURLProtocol.install(stage.client, into: configuration, streaming: true)
            let counter = PieceCounter()
            let session = URLSession(configuration: configuration, delegate: counter, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            await withCheckedContinuation { continuation in
                counter.done.withLock { $0 = continuation }
                session.dataTask(with: URL(string: stage.url("b.test", "/large"))!).resume()
            }
            let (bytes, pieces, error) = counter.state.withLock { ($0.bytes, $0.pieces, $0.error) }
            #expect(error == nil, "\(String(describing: error))")
            #expect(bytes == NginxServer.largeFileBytes)
            #expect(pieces > 10, "\(pieces) pieces")
        }
    }

    @Test func anHTTPBodyStreamUploadArrivesIntact() async throws {
        try await Self.withSession { session, stage, _ in
            var request = URLRequest(url: URL(string: stage.url("a.test", "/echo"))!)
            request.httpMethod = "POST"
            let text = String(repeating: "stream-0123456789|", count: 5000)
            request.httpBodyStream = InputStream(data: Data(text.utf8))
            let (data, _) = try await session.data(for: request)
            #expect(String(decoding: data, as: UTF8.self) == "method=POST body=\(text)")

            var bytes = URLRequest(url: URL(string: stage.url("b.test", "/redirect/307/a.test/echo"))!)
            bytes.httpMethod = "PUT"
            bytes.httpBody = Data("in memory".utf8)
            let (echoed, _) = try await session.data(for: bytes)
            #expect(String(decoding: echoed, as: UTF8.self) == "method=PUT body=in memory", "a 307 sends an in-memory body again")
        }
    }

    /// One installation per process: the same client and stores again is fine, others are refused rather than mixed;
    /// the session's additional headers are sent.
    @Test func installationsAreNotMixedAndAdditionalHeadersAreSent() async throws {
        try await Self.withSession { session, stage, _ in
            let other = URLSessionConfiguration.ephemeral
            let refused = #expect(throws: HTTPDNSURLProtocolError.self) { try HTTPDNSURLProtocol.install(stage.client, into: other) }
            #expect(refused?.code == .alreadyInstalled)
            let same = URLSessionConfiguration.ephemeral
            same.urlCache = session.configuration.urlCache
            same.httpCookieStorage = session.configuration.httpCookieStorage
            same.httpAdditionalHeaders = ["Cookie": "from=configuration"]
            HTTPDNSURLProtocol.uninstall()
            try HTTPDNSURLProtocol.install(stage.client, into: same)
            let withHeaders = URLSession(configuration: same)
            defer { withHeaders.finishTasksAndInvalidate() }
            let (data, _) = try await withHeaders.data(from: URL(string: stage.url("a.test", "/cookie"))!)
            #expect(String(decoding: data, as: UTF8.self) == "cookie=from=configuration\n")
        }
    }

    @Test func failuresAreURLErrorsThatSayWhy() async throws {
        try await Self.withSession { session, stage, _ in
            stage.trusted.set("c.test", .addresses(ipv4: [stage.origin.address], ipv6: [], ttl: 300))
            let error = await #expect(throws: URLError.self) {
                _ = try await session.data(from: URL(string: stage.url("c.test", "/"))!)
            }
            #expect(error?.code == .serverCertificateUntrusted, "\(String(describing: error))")
            #expect((error?.userInfo[NSUnderlyingErrorKey] as? InterceptorError)?.code == .certificateRejected)
            let unresolved = await #expect(throws: URLError.self) {
                _ = try await session.data(from: URL(string: stage.url("nowhere.test", "/"))!)
            }
            #expect(unresolved?.code == .cannotFindHost, "\(String(describing: unresolved))")
        }
    }
}

/// A data delegate that counts what it receives.
private final class PieceCounter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    struct State {
        var bytes = 0
        var pieces = 0
        var error: (any Error)?
    }

    let state = Mutex(State())
    let done = Mutex<CheckedContinuation<Void, Never>?>(nil)

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        state.withLock {
            $0.bytes += data.count
            $0.pieces += 1
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        state.withLock { $0.error = error }
        done.withLock { $0.take() }?.resume()
    }
}
