import HTTPDNSCore
import HTTPDNSServerTransport
import HTTPDNSWire
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore

/// The native HTTPDNS API (docs/WIRE-FORMATS.md §1): `/d` for one host, `/resolve` for a batch, with JSON answers.
struct NativeAPI: Sendable {
    let resolver: ResolverCache
    let configuration: HTTPDNSServerConfiguration

    /// `GET /d?host=…[&query=4|6|4,6]`.
    func single(_ request: Request) async throws -> Response {
        let (host, families) = try Self.singleQuestion(request.uri.queryParameters)
        return Response(Self.singleReply(host, families, try await resolve(host, families)))
    }

    /// `/d` without the router: from the cache, or (`lookingUp`) as a lookup whose reply is the one ``single(_:)``
    /// would give. A request that is not valid is the router's.
    func localSingle(_ parameters: some QueryParameters, lookingUp: Bool) -> LocalAnswer {
        guard let (host, families) = try? Self.singleQuestion(parameters) else { return .router }
        if let answer = cachedAnswer(host, families) { return .reply(Self.singleReply(host, families, answer)) }
        guard lookingUp else { return .router }
        return .lookUp { eventLoop, completion in
            let ticket = resolver.resolve(host, families: families) { result in
                // The reply is built on the event loop, not on the thread the source answered on.
                eventLoop.execute {
                    switch result {
                    case .success(let resolution):
                        completion(Self.singleReply(host, families, Answer(resolution)))
                    case .failure(let error) where error.code.isNegativeAnswer:
                        completion(Self.singleReply(host, families, Answer(negative: error)))
                    case .failure(let error):
                        completion(unavailable(host, error).reply)
                    }
                }
            }
            return CacheMiss.Cancellation(resolver, ticket)
        }
    }

    private static func singleQuestion(_ parameters: some QueryParameters) throws -> (HostName, AddressFamilies) {
        guard let hostText = parameters.first("host"), !hostText.isEmpty else { throw ServiceError.missingArgument("host") }
        return (try hostName(hostText), try families(parameters.first("query")))
    }

    /// The ``NativeAnswer`` written straight into the body: this is every `/d` cache hit's work.
    private static func singleReply(_ host: HostName, _ families: AddressFamilies, _ answer: Answer) -> Reply {
        let native = NativeAnswer(
            host: host.value,
            ipv4: families.contains(.ipv4) ? answer.ipv4 : nil,
            ipv6: families.contains(.ipv6) ? answer.ipv6 : nil,
            ttlSeconds: answer.ttlSeconds,
            originTTLSeconds: answer.originTTLSeconds,
            stale: answer.stale
        )
        var body = ByteBuffer()
        body.reserveCapacity(native.estimatedJSONSize)
        native.writeJSON(into: &body)
        return Reply(contentType: "application/json", cacheControl: .maxAge(answer.ttlSeconds), body: body)
    }

    /// `GET /resolve?host=a,b[&query=4,6]`.
    func batch(_ request: Request) async throws -> Response {
        let parameters = request.uri.queryParameters
        guard let list = parameters["host"], !list.isEmpty else { throw ServiceError.missingArgument("host") }
        let texts = list.split(separator: ",", omittingEmptySubsequences: false)
        guard texts.count <= configuration.maxHostsPerBatch else {
            throw ServiceError.tooManyHosts(texts.count, max: configuration.maxHostsPerBatch)
        }
        let hosts = try texts.map(Self.hostName)
        let families = try Self.families(parameters["query"])
        let answers = try await withThrowingTaskGroup(of: (Int, Answer).self) { group in
            for (index, host) in hosts.enumerated() {
                group.addTask { (index, try await resolve(host, families)) }
            }
            var answers = [Answer?](repeating: nil, count: hosts.count)
            for try await (index, answer) in group { answers[index] = answer }
            return answers.map { $0! }
        }
        var records: [NativeBatchAnswer.Record] = []
        for (host, answer) in zip(hosts, answers) {
            if families.contains(.ipv4) {
                let ttl = familyTTL(host, .ipv4, answer)
                records.append(.init(host: host.value, family: .ipv4, addresses: answer.ipv4.map(IPAddress.v4), ttlSeconds: ttl, stale: answer.stale))
            }
            if families.contains(.ipv6) {
                let ttl = familyTTL(host, .ipv6, answer)
                records.append(.init(host: host.value, family: .ipv6, addresses: answer.ipv6.map(IPAddress.v6), ttlSeconds: ttl, stale: answer.stale))
            }
        }
        let maxAge = answers.map(\.ttlSeconds).min() ?? 0
        let body = NativeBatchAnswer(records: records).jsonText
        return Response(Reply(contentType: "application/json", cacheControl: .maxAge(maxAge), body: ByteBuffer(string: body)))
    }

    /// What one host resolved to, negative answers included (as empty lists with their TTL).
    struct Answer: Sendable {
        var ipv4: [IPv4Address] = []
        var ipv6: [IPv6Address] = []
        var ttlSeconds: UInt32
        var originTTLSeconds: UInt32
        var stale = false

        init(_ resolution: Resolution) {
            ipv4 = resolution.ipv4
            ipv6 = resolution.ipv6
            ttlSeconds = resolution.ttlSeconds
            originTTLSeconds = resolution.originTTLSeconds
            stale = resolution.stale
        }

        init(negative error: ResolutionError) {
            ttlSeconds = error.ttlSeconds ?? 0
            originTTLSeconds = ttlSeconds
        }
    }

    func resolve(_ host: HostName, _ families: AddressFamilies) async throws -> Answer {
        do {
            return Answer(try await resolver.resolve(host, families: families))
        } catch let error as ResolutionError where error.code.isNegativeAnswer {
            return Answer(negative: error)
        } catch let error as ResolutionError {
            throw unavailable(host, error)
        }
    }

    /// 503 for a lookup that failed with nothing cached to answer from.
    private func unavailable(_ host: HostName, _ error: ResolutionError) -> ServiceError {
        ServiceError.upstreamUnavailable("no answer for \(host) and nothing cached: \(error.code)", retryAfterSeconds: configuration.upstreamRetryAfterSeconds)
    }

    /// What the cache holds for `host` now, negative answers included; nil when upstream must be asked.
    private func cachedAnswer(_ host: HostName, _ families: AddressFamilies) -> Answer? {
        do {
            return try resolver.cachedResolution(host, families: families).map(Answer.init)
        } catch let error as ResolutionError where error.code.isNegativeAnswer {
            return Answer(negative: error)
        } catch {
            return nil
        }
    }

    /// One family's own TTL left, read back from the cache the batch just filled: each record of a batch carries
    /// its family's TTL, not the smaller of the two. Falls back to the answer's TTL when the entry is gone.
    private func familyTTL(_ host: HostName, _ family: AddressFamily, _ answer: Answer) -> UInt32 {
        guard !answer.stale else { return answer.ttlSeconds }
        do {
            return try resolver.cachedResolution(host, families: AddressFamilies(family))?.ttlSeconds ?? answer.ttlSeconds
        } catch let error as ResolutionError {
            return error.ttlSeconds ?? answer.ttlSeconds
        } catch {
            return answer.ttlSeconds
        }
    }

    static func hostName(_ text: Substring) throws -> HostName {
        do {
            return try HostName(String(text))
        } catch {
            throw ServiceError.invalidHost("\(error)")
        }
    }

    /// `query=4` (the default), `6`, or `4,6` (in either order).
    static func families(_ value: Substring?) throws -> AddressFamilies {
        guard let families = AddressFamilies(nativeQuery: value) else { throw ServiceError.invalidQuery(String(value ?? "")) }
        return families
    }
}
