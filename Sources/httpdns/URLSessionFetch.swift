import Foundation
import FoundationNetworking
import HTTPDNSInterceptor
import HTTPDNSSynchronization
import HTTPDNSURLSession
import NIOCore

/// `fetch --adapter urlsession`: the request through a URLSession with ``HTTPDNSStreamingURLProtocol`` installed,
/// read by a data delegate, so the body streams as it does through the AsyncHTTPClient adapter.
enum URLSessionFetch {
    static func run(
        method: String,
        url: String,
        headers: [CanonicalRequest.Header],
        data: String?,
        client: InterceptingHTTPClient,
        timeout: Duration
    ) async throws -> (FetchedHead, AsyncThrowingStream<ByteBuffer, any Error>) {
        guard let target = URL(string: url) else { throw InterceptorError(.invalidRequest, "'\(url)' is not a URL URLSession can take") }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout / .seconds(1)
        try HTTPDNSURLProtocol.install(client, into: configuration, streaming: true)
        var request = URLRequest(url: target)
        request.timeoutInterval = timeout / .seconds(1)
        request.httpMethod = method
        for header in headers { request.addValue(header.value, forHTTPHeaderField: header.name) }
        request.httpBody = data.map { Data($0.utf8) }

        let (body, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
        let reader = Reader(body: continuation)
        let session = URLSession(configuration: configuration, delegate: reader, delegateQueue: nil)
        let task = session.dataTask(with: request)
        continuation.onTermination = { _ in
            task.cancel()
            session.finishTasksAndInvalidate()
        }
        let response: HTTPURLResponse = try await withCheckedThrowingContinuation { head in
            reader.head.withLock { $0 = head }
            task.resume()
        }
        guard let finalURL = response.url?.absoluteString,
            let canonical = try? CanonicalRequest.normalize(method: method, url: finalURL, headers: headers, hasBody: data != nil, configuration: client.configuration.canonical)
        else { throw InterceptorError(.transportFailed, "URLSession gave a response without a URL") }
        let fields = response.allHeaderFields.compactMap { name, value in (name as? String).map { ($0, "\(value)") } }
        let policy: CacheStoragePolicy = .decide(
            method: canonical.method, scheme: canonical.scheme, requestHeaders: canonical.headers.map { ($0.name, $0.value) },
            status: response.statusCode, responseHeaders: fields, configuration: client.configuration.storagePolicy
        )
        let head = FetchedHead(
            status: response.statusCode,
            reason: HTTPURLResponse.localizedString(forStatusCode: response.statusCode),
            headers: fields.sorted { $0.0 < $1.0 },
            request: canonical,
            connectedAddress: nil,
            policy: policy
        )
        return (head, body)
    }

    /// The data delegate: the head to the waiting call, the pieces to the body stream.
    private final class Reader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let head = Mutex<CheckedContinuation<HTTPURLResponse, any Error>?>(nil)
        let body: AsyncThrowingStream<ByteBuffer, any Error>.Continuation

        init(body: AsyncThrowingStream<ByteBuffer, any Error>.Continuation) {
            self.body = body
        }

        func urlSession(
            _ session: URLSession,
            dataTask: URLSessionDataTask,
            didReceive response: URLResponse,
            completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
        ) {
            if let response = response as? HTTPURLResponse {
                head.withLock { $0.take() }?.resume(returning: response)
            }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            body.yield(ByteBuffer(bytes: data))
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            guard let error else {
                // Finished before any response: cannot happen for HTTP, but the waiting call must not hang.
                head.withLock { $0.take() }?.resume(throwing: InterceptorError(.transportFailed, "URLSession ended without a response"))
                body.finish()
                return
            }
            // The interceptor's own error, which the adapter keeps in the URLError, says the most.
            let failure: any Error = (error as? URLError)?.userInfo[NSUnderlyingErrorKey] as? InterceptorError ?? error
            head.withLock { $0.take() }?.resume(throwing: failure)
            body.finish(throwing: failure)
        }
    }
}
