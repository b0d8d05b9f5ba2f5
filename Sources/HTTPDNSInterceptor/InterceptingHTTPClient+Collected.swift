import AsyncHTTPClient
import HTTPDNSCore
import HTTPDNSNetworking
import HTTPDNSSynchronization
import Logging
import NIOCore
import NIOHTTP1

/// Requests whose body is in memory and whose response body is collected: what Vapor's `Client` sends, for the
/// Vapor adapter.
///
/// The future form sends a request the cache answers at once, to one address, on AsyncHTTPClient's `EventLoopFuture`
/// API, as Vapor's own client sends its requests: no task, no async stream for the body. That direct path is taken
/// when every step of the pipeline is known before anything is sent:
/// - the URL is canonical and taken (not an address, not excluded), with no user information;
/// - the resolver's trusted cache holds the host's answer (`HostResolver.cachedAnswer`);
/// - there is one address to go to: the answer's only one, or the one a request to this origin last succeeded on
///   (so no Happy Eyeballs race is due).
///
/// Everything else continues through the task-based pipeline of `execute(method:url:headers:body:timeout:logger:)`,
/// with the same rules: a lookup to wait for, a race, a redirect (from its next hop on), a failover (a warm address
/// that no longer connects is forgotten and the request goes through the whole pipeline; nothing was sent). Errors
/// are the same `InterceptorError`s either way.
extension InterceptingHTTPClient {
    /// A response whose body was collected.
    package struct CollectedResponse: Sendable {
        package var status: HTTPResponseStatus
        package var headers: HTTPHeaders
        /// Nil when the response had no body bytes.
        package var body: ByteBuffer?
    }

    /// Sends a request, following redirects, and collects the response body, all within `timeout`; the future
    /// completes on `eventLoop` with the response or an `InterceptorError`.
    ///
    /// - Parameter maxBodyBytes: the longest response body collected; a longer one fails `transportFailed`, whose cause
    ///   is NIO's `NIOTooManyBytesError`.
    package func executeCollecting(
        method: String,
        url: String,
        headers: HTTPHeaders,
        body: ByteBuffer?,
        timeout: Duration,
        maxBodyBytes: Int,
        on eventLoop: any EventLoop,
        logger: Logger?
    ) -> EventLoopFuture<CollectedResponse> {
        let logger = logger ?? self.logger
        let deadline = NIODeadline.now() + .nanoseconds(timeout.clampedNanoseconds)
        let exchange = Exchange(
            method: method, url: url, headers: headers, body: body, timeout: timeout, deadline: deadline, maxBodyBytes: maxBodyBytes, logger: logger
        )
        guard let route = directRoute(method: method, url: url, fields: Self.fields(of: headers), body: body) else {
            return throughPipeline(exchange, on: eventLoop)
        }
        return sendDirect(route, exchange, on: eventLoop, retried: false)
    }

    /// ``executeCollecting(method:url:headers:body:timeout:maxBodyBytes:on:logger:)`` as an async call, through the
    /// task-based pipeline: cancelling the calling task cancels the request.
    package func executeCollecting(
        method: String,
        url: String,
        headers: HTTPHeaders,
        body: ByteBuffer?,
        timeout: Duration,
        maxBodyBytes: Int,
        logger: Logger?
    ) async throws(InterceptorError) -> CollectedResponse {
        let logger = logger ?? self.logger
        let deadline = NIODeadline.now() + .nanoseconds(timeout.clampedNanoseconds)
        let exchange = Exchange(
            method: method, url: url, headers: headers, body: body, timeout: timeout, deadline: deadline, maxBodyBytes: maxBodyBytes, logger: logger
        )
        return try await pipelined(exchange, watchedByCaller: false)
    }

    /// What one call asked for, as each path needs it.
    struct Exchange: Sendable {
        var method: String
        var url: String
        var headers: HTTPHeaders
        var body: ByteBuffer?
        var timeout: Duration
        var deadline: NIODeadline
        var maxBodyBytes: Int
        var logger: Logger

        /// The caller's request, for the pipeline.
        var request: HTTPClientRequest {
            var request = HTTPClientRequest(url: url)
            request.method = HTTPMethod(rawValue: method)
            request.headers = headers
            return request
        }
    }

    /// The whole request through the task-based pipeline, its body collected, in a task the deadline cancels.
    private func throughPipeline(_ exchange: Exchange, on eventLoop: any EventLoop) -> EventLoopFuture<CollectedResponse> {
        inTask(on: eventLoop, deadline: exchange.deadline) { () async throws(InterceptorError) -> CollectedResponse in
            try await self.pipelined(exchange, watchedByCaller: true)
        }
    }

    /// The whole request through the task-based pipeline, its body collected.
    private func pipelined(_ exchange: Exchange, watchedByCaller: Bool) async throws(InterceptorError) -> CollectedResponse {
        try await collect(exchange, watchedByCaller: watchedByCaller) { () async throws(InterceptorError) -> Response in
            try await self.execute(exchange.request, body: exchange.body.map(Body.bytes), deadline: exchange.deadline, logger: exchange.logger)
        }
    }

    /// A request that can go straight out: its canonical form, where to, and the client to send it on.
    struct DirectRoute: Sendable {
        var canonical: CanonicalRequest
        var request: HTTPClient.Request
        var address: IPAddress
        /// The warm address's key when the address was chosen among several, nil when it is the only one.
        var warmKey: String?
        var lease: OriginClients.Lease
    }

    /// The direct route of a request, when every step is known without waiting; nil sends it through the pipeline
    /// (which also says what is wrong with a request that cannot be sent).
    private func directRoute(method: String, url: String, fields: [CanonicalRequest.Header], body: ByteBuffer?) -> DirectRoute? {
        guard
            let canonical = try? CanonicalRequest.normalize(method: method, url: url, headers: fields, hasBody: body != nil, configuration: configuration.canonical),
            canonical.userInfo == nil
        else { return nil }
        let origin = canonical.host  // Read from the canonical URL once, for the decision and the origin client.
        guard case .take(let host) = decide(host: origin), let answer = try? resolver.cachedAnswer(host, families: configuration.families) else {
            return nil
        }
        let address: IPAddress
        var warmKey: String?
        let resolution = answer.resolution
        switch resolution.ipv4.count + resolution.ipv6.count {
        case 0:
            return nil
        case 1:
            address = resolution.ipv4.first.map(IPAddress.v4) ?? .v6(resolution.ipv6[0])
        default:
            let key = Self.warmKey(canonical, port: Self.port(of: canonical))
            guard let warm = warmAddresses.address(of: key, among: orderedAddresses(of: resolution)) else { return nil }
            address = warm
            warmKey = key
        }
        guard
            let request = try? HTTPClient.Request(
                url: canonical.url, method: HTTPMethod(rawValue: canonical.method), headers: Self.headers(of: canonical),
                body: body.map { .byteBuffer($0) }
            ),
            let lease = origins.lease(.init(host: origin, address: address))
        else { return nil }
        return DirectRoute(canonical: canonical, request: request, address: address, warmKey: warmKey, lease: lease)
    }

    /// Sends `route`'s request on AsyncHTTPClient's future API and collects the response.
    /// - Parameter retried: whether this is the one more send of an idempotent request whose stream ended unanswered.
    private func sendDirect(_ route: DirectRoute, _ exchange: Exchange, on eventLoop: any EventLoop, retried: Bool) -> EventLoopFuture<CollectedResponse> {
        exchange.logger.trace("sending directly, on AsyncHTTPClient's future API", metadata: ["address": "\(route.address)"])
        let delegate = CollectingDelegate(
            method: route.canonical.method, limit: exchange.maxBodyBytes, dropsRedirectBodies: configuration.maxRedirects > 0
        )
        // AsyncHTTPClient completes on the caller's loop only when it is one of the client's own: else on one of
        // those, and the result hops over.
        let inGroup = eventLoops.contains(ObjectIdentifier(eventLoop))
        let task = route.lease.client.execute(
            request: route.request, delegate: delegate, eventLoop: inGroup ? .delegate(on: eventLoop) : .indifferent, deadline: exchange.deadline,
            logger: exchange.logger
        )
        let answer = inGroup ? task.futureResult : task.futureResult.hop(to: eventLoop)
        // One handler for either outcome: what `answered` goes on to do (a redirect's next hop, which may fail) is
        // never taken for this send's failure.
        let promise = eventLoop.makePromise(of: CollectedResponse.self)
        answer.whenComplete { outcome in
            // The lease is held until here: the client is not shut down under the request.
            withExtendedLifetime(route.lease) {}
            switch outcome {
            case .success(let response):
                if let key = route.warmKey { self.warmAddresses.record(route.address, for: key) }
                promise.completeWith(self.answered(response.head, body: response.body, route: route, exchange, on: eventLoop))
            case .failure(let error):
                promise.completeWith(self.sendFailed(error, delegate: delegate, route: route, exchange, on: eventLoop, retried: retried))
            }
        }
        return promise.futureResult
    }

    /// A direct send that failed: before any answer, sent once more (an idempotent request whose stream was refused),
    /// handed to the pipeline (a warm address that no longer connects) or failed as the pipeline fails it; after the
    /// response head, see ``failedAfterHead(_:_:route:_:on:)``.
    private func sendFailed(
        _ error: any Error,
        delegate: CollectingDelegate,
        route: DirectRoute,
        _ exchange: Exchange,
        on eventLoop: any EventLoop,
        retried: Bool
    ) -> EventLoopFuture<CollectedResponse> {
        if let head = delegate.head {
            return self.failedAfterHead(head, error, route: route, exchange, on: eventLoop)
        }
        if !retried, Self.idempotentMethods.contains(route.canonical.method), self.neverAnswered(error) {
            // As the pipeline does: a stream refused by a GOAWAY is sent once more, on a new stream.
            self.retries.increment()
            exchange.logger.debug("the stream ended before an answer; sending once more", metadata: ["error": "\(error)"])
            return self.sendDirect(route, exchange, on: eventLoop, retried: true)
        }
        if let key = route.warmKey { self.warmAddresses.forget(route.address, for: key) }
        let described = self.describe(error, host: route.canonical.host, address: route.address, method: route.canonical.method, replayable: true)
        guard described.code == .connectFailed else {
            return self.failed(described, exchange, on: eventLoop)
        }
        guard route.warmKey == nil else {
            // The warm address no longer connects and nothing was sent: the whole pipeline, whose race among the
            // answer's addresses may try this one again.
            self.failovers.increment()
            exchange.logger.debug("connecting failed; trying the next address", metadata: ["address": "\(route.address)", "error": "\(error)"])
            return self.throughPipeline(exchange, on: eventLoop)
        }
        return self.failed(
            InterceptorError(.connectFailed, "no address of \(route.canonical.host) could be connected to: \(described.message)"), exchange,
            on: eventLoop
        )
    }

    /// A direct request that failed once its response head had arrived: as in the pipeline, which returns at the head
    /// (counted then, its address kept warm) and collects the body after, the failure is the body's, never retried.
    /// A redirect to follow ends the request at its head (`CollectingDelegate.FollowRedirect`): it is followed, its
    /// body unread.
    private func failedAfterHead(
        _ head: HTTPResponseHead,
        _ error: any Error,
        route: DirectRoute,
        _ exchange: Exchange,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<CollectedResponse> {
        if let key = route.warmKey { warmAddresses.record(route.address, for: key) }
        if error is CollectingDelegate.FollowRedirect {
            return answered(head, body: nil, route: route, exchange, on: eventLoop)
        }
        let url = exchange.url
        let failure: InterceptorError
        switch error {
        case let error as CollectingDelegate.TooLong:
            failure = InterceptorError(
                .transportFailed, "the response body of \(url) is longer than \(error.limit) bytes", cause: NIOTooManyBytesError(maxBytes: error.limit)
            )
        case let error as HTTPClientError where error == .deadlineExceeded:
            failure = InterceptorError(.timeout, "the response body of \(url) did not arrive within \(exchange.timeout)", cause: error)
        case let error as HTTPClientError where error == .readTimeout:
            failure = InterceptorError(.timeout, "the response body of \(url) did not arrive in time", cause: error)
        default:
            failure = InterceptorError(.transportFailed, "the response body of \(url) could not be read: \(error)", cause: error)
        }
        sent.increment()
        exchange.logger.debug("request failed", metadata: ["error": "\(failure)"])
        return eventLoop.makeFailedFuture(failure)
    }

    /// A direct request's response: the answer, or a redirect to follow through the pipeline from its next hop.
    private func answered(
        _ head: HTTPResponseHead,
        body: ByteBuffer?,
        route: DirectRoute,
        _ exchange: Exchange,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<CollectedResponse> {
        let collected = CollectedResponse(status: head.status, headers: head.headers, body: body.flatMap { $0.readableBytes > 0 ? $0 : nil })
        let status = Int(head.status.code)
        guard Redirect.statuses.contains(status), configuration.maxRedirects > 0 else {
            sent.increment()
            return eventLoop.makeSucceededFuture(collected)
        }
        let next: Redirect?
        do {
            next = try Redirect.follow(
                status: status, location: head.headers.first(name: "location"), method: route.canonical.method, from: route.canonical,
                headers: Self.fields(of: exchange.headers), allowingInsecure: configuration.allowsInsecureRedirects
            )
        } catch {
            return failed(error, exchange, on: eventLoop)
        }
        guard let next else {
            sent.increment()
            return eventLoop.makeSucceededFuture(collected)
        }
        // maxRedirects > 0, and this is the first: followed. Its body, in memory, can be sent again.
        exchange.logger.debug("following a redirect", metadata: ["status": "\(status)", "to": "\(next.url)"])
        return inTask(on: eventLoop, deadline: exchange.deadline) { () async throws(InterceptorError) -> CollectedResponse in
            try await self.collect(exchange, watchedByCaller: true) { () async throws(InterceptorError) -> Response in
                try await self.sendCounted(
                    method: next.method, url: next.url, fields: next.headers, body: next.keepsBody ? exchange.body.map(Body.bytes) : nil,
                    redirects: 1, deadline: exchange.deadline, logger: exchange.logger
                )
            }
        }
    }

    private func failed(_ error: InterceptorError, _ exchange: Exchange, on eventLoop: any EventLoop) -> EventLoopFuture<CollectedResponse> {
        count(error, logger: exchange.logger)
        return eventLoop.makeFailedFuture(error)
    }

    /// Runs `operation` in a task whose future completes on `eventLoop`; one timer on the loop cancels the task at
    /// `deadline` (the pipeline then says `timeout`, see ``collect(_:watchedByCaller:_:)``).
    private func inTask(
        on eventLoop: any EventLoop,
        deadline: NIODeadline,
        _ operation: @escaping @Sendable () async throws(InterceptorError) -> CollectedResponse
    ) -> EventLoopFuture<CollectedResponse> {
        let promise = eventLoop.makePromise(of: CollectedResponse.self)
        let task = Task {
            do {
                promise.succeed(try await operation())
            } catch {
                promise.fail(error)
            }
        }
        let timer = eventLoop.scheduleTask(deadline: deadline) { task.cancel() }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return promise.futureResult
    }

    /// The response `send` gives, its body collected before the exchange's deadline.
    /// - Parameter watchedByCaller: whether the caller cancels this task at the deadline (``inTask(on:deadline:_:)``
    ///   does), so that the body needs no race of its own against it, and a cancellation after it is the timeout.
    private func collect(
        _ exchange: Exchange,
        watchedByCaller: Bool,
        _ send: () async throws(InterceptorError) -> Response
    ) async throws(InterceptorError) -> CollectedResponse {
        let url = exchange.url
        let deadline = exchange.deadline
        let answer: Response
        do {
            answer = try await send()
        } catch where watchedByCaller && error.code == .cancelled && NIODeadline.now() >= deadline {
            throw InterceptorError(.timeout, "the request to \(url) did not complete within \(exchange.timeout)", cause: error)
        }
        let head = answer.response
        // No more than one ByteBuffer holds.
        let limit = min(exchange.maxBodyBytes, Int(UInt32.max))
        let collected: ByteBuffer?
        do {
            if watchedByCaller {
                collected = try await head.body.collect(upTo: limit)
            } else {
                collected = try await withDeadline(deadline) { try await head.body.collect(upTo: limit) }
            }
        } catch let error as NIOTooManyBytesError {
            throw InterceptorError(.transportFailed, "the response body of \(url) is longer than \(limit) bytes", cause: error)
        } catch {
            if watchedByCaller, Task.isCancelled, NIODeadline.now() >= deadline {
                throw InterceptorError(.timeout, "the response body of \(url) did not arrive within \(exchange.timeout)", cause: error)
            }
            if Task.isCancelled { throw InterceptorError(.cancelled, "the request to \(url) was cancelled", cause: error) }
            if let error = error as? HTTPClientError, error == .readTimeout || error == .deadlineExceeded {
                throw InterceptorError(.timeout, "the response body of \(url) did not arrive in time", cause: error)
            }
            throw InterceptorError(.transportFailed, "the response body of \(url) could not be read: \(error)", cause: error)
        }
        guard let collected else {
            throw InterceptorError(.timeout, "the response body of \(url) did not arrive within \(exchange.timeout)")
        }
        return CollectedResponse(status: head.status, headers: head.headers, body: collected.readableBytes > 0 ? collected : nil)
    }
}

/// Collects a direct request's response: the body up to a bound. A redirect to follow ends the request at its head
/// (``FollowRedirect``), its body not read, as the pipeline drops it. Whether the head has arrived tells a failure of
/// the body from one before any answer.
final class CollectingDelegate: HTTPClientResponseDelegate {
    struct Collected: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer?
    }

    /// The body is longer than the bound.
    struct TooLong: Error {
        var limit: Int
    }

    /// The response is a redirect to follow: its head is all that is needed.
    struct FollowRedirect: Error {}

    private struct State {
        var head: HTTPResponseHead?
        var body: ByteBuffer?
    }

    private let state = Mutex(State())
    private let isHead: Bool
    private let limit: Int
    private let dropsRedirectBodies: Bool

    /// - Parameters:
    ///   - limit: the longest body kept; at most what one `ByteBuffer` holds (4 GiB).
    ///   - dropsRedirectBodies: whether redirects are followed, so that a redirect ends the request at its head.
    init(method: String, limit: Int, dropsRedirectBodies: Bool) {
        isHead = method == "HEAD"
        self.limit = min(max(0, limit), Int(UInt32.max))
        self.dropsRedirectBodies = dropsRedirectBodies
    }

    /// The response head, once it has arrived.
    var head: HTTPResponseHead? { state.withLock { $0.head } }

    func didReceiveHead(task: HTTPClient.Task<Collected>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let redirect = dropsRedirectBodies && Redirect.statuses.contains(Int(head.status.code)) && head.headers.first(name: "location")?.isEmpty == false
        state.withLock { $0.head = head }
        if redirect { return task.eventLoop.makeFailedFuture(FollowRedirect()) }
        // A HEAD's, a 204's, a 304's or a 1xx's Content-Length announces no body of its own (RFC 9110 §8.6).
        let status = head.status.code
        if !isHead, status != 204, status != 304, status >= 200, let length = head.headers.first(name: "content-length").flatMap({ Int($0) }),
            length > limit
        {
            return task.eventLoop.makeFailedFuture(TooLong(limit: limit))
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Collected>, _ part: ByteBuffer) -> EventLoopFuture<Void> {
        let fits = state.withLock { state -> Bool in
            guard (state.body?.readableBytes ?? 0) + part.readableBytes <= limit else { return false }
            if state.body == nil {
                state.body = part
            } else {
                var part = part
                state.body!.writeBuffer(&part)
            }
            return true
        }
        return fits ? task.eventLoop.makeSucceededVoidFuture() : task.eventLoop.makeFailedFuture(TooLong(limit: limit))
    }

    func didReceiveError(task: HTTPClient.Task<Collected>, _ error: any Error) {}

    func didFinishRequest(task: HTTPClient.Task<Collected>) throws -> Collected {
        try state.withLock { state in
            guard let head = state.head else { throw HTTPClientError.remoteConnectionClosed }
            return Collected(head: head, body: state.body)
        }
    }
}
