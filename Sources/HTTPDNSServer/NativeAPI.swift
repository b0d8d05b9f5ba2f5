import HTTPDNSCore
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore

/// The native HTTPDNS API (WIRE-FORMATS.md §1): `/d` for one host, `/resolve` for a batch, with JSON answers.
struct NativeAPI: Sendable {
    let resolver: ResolverCache
    let configuration: HTTPDNSServerConfiguration

    /// `GET /d?host=…[&query=4|6|4,6]`.
    func single(_ request: Request) async throws -> Response {
        let (host, families) = try Self.singleQuestion(request.uri.queryParameters)
        return Response(Self.singleReply(host, families, try await resolve(host, families)))
    }

    /// `/d` answered from the cache without suspending, for ``CacheHitResponder``; nil when upstream must be asked
    /// or the request is not a valid one (``single(_:)`` answers both).
    func cachedSingle(_ parameters: some QueryParameters) -> Reply? {
        guard let (host, families) = try? Self.singleQuestion(parameters), let answer = cachedAnswer(host, families) else {
            return nil
        }
        return Self.singleReply(host, families, answer)
    }

    private static func singleQuestion(_ parameters: some QueryParameters) throws -> (HostName, AddressFamilies) {
        guard let hostText = parameters.first("host"), !hostText.isEmpty else { throw ServiceError.missingArgument("host") }
        return (try hostName(hostText), try families(parameters.first("query")))
    }

    /// `{"host":…,"ips":[…],"ipsv6":[…],"ttl":…,"origin_ttl":…[,"stale":true]}`, written straight into the body:
    /// this is every `/d` cache hit's work, and nothing in it needs escaping (host names are letters, digits,
    /// hyphens and dots; addresses and numbers are digits, dots, colons and hex).
    private static func singleReply(_ host: HostName, _ families: AddressFamilies, _ answer: Answer) -> Reply {
        var body = ByteBuffer()
        body.reserveCapacity(64 + host.value.utf8.count + 18 * answer.ipv4.count + 42 * answer.ipv6.count)
        body.writeStaticString(#"{"host":""#)
        body.writeString(host.value)
        body.writeStaticString("\"")
        if families.contains(.ipv4) {
            Self.writeList(#","ips":["#, answer.ipv4, into: &body) { $0.writeIPv4($1) }
        }
        if families.contains(.ipv6) {
            Self.writeList(#","ipsv6":["#, answer.ipv6, into: &body) { $0.writeString($1.description) }
        }
        body.writeStaticString(#","ttl":"#)
        body.writeDecimal(Int(answer.ttlSeconds))
        body.writeStaticString(#","origin_ttl":"#)
        body.writeDecimal(Int(answer.originTTLSeconds))
        if answer.stale { body.writeStaticString(#","stale":true"#) }
        body.writeStaticString("}")
        return Reply(contentType: "application/json", cacheControl: .maxAge(answer.ttlSeconds), body: body)
    }

    /// `opening`, then each address quoted, separated by commas, then `]`.
    private static func writeList<Address>(
        _ opening: StaticString,
        _ addresses: [Address],
        into body: inout ByteBuffer,
        writing write: (inout ByteBuffer, Address) -> Void
    ) {
        body.writeStaticString(opening)
        for (index, address) in addresses.enumerated() {
            body.writeStaticString(index == 0 ? "\"" : ",\"")
            write(&body, address)
            body.writeStaticString("\"")
        }
        body.writeStaticString("]")
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
        var records: [JSON] = []
        for (host, answer) in zip(hosts, answers) {
            if families.contains(.ipv4) {
                records.append(Self.batchRecord(host, type: 1, answer.ipv4.map(\.description), ttl: familyTTL(host, .ipv4, answer), answer))
            }
            if families.contains(.ipv6) {
                records.append(Self.batchRecord(host, type: 28, answer.ipv6.map(\.description), ttl: familyTTL(host, .ipv6, answer), answer))
            }
        }
        let maxAge = answers.map(\.ttlSeconds).min() ?? 0
        return Response(.json(.object([("dns", .array(records))]), maxAge: maxAge))
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
            throw ServiceError.upstreamUnavailable(
                "no answer for \(host) and nothing cached: \(error.code)",
                retryAfterSeconds: configuration.upstreamRetryAfterSeconds
            )
        }
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

    private static func batchRecord(_ host: HostName, type: Int, _ addresses: [String], ttl: UInt32, _ answer: Answer) -> JSON {
        var members: [(String, JSON)] = [
            ("host", .string(host.value)),
            ("ips", .array(addresses.map(JSON.string))),
            ("type", .integer(type)),
            ("ttl", .integer(Int(ttl))),
        ]
        if answer.stale { members.append(("stale", .bool(true))) }
        return .object(members)
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
        guard let value else { return .ipv4 }
        var families: AddressFamilies = []
        for part in value.split(separator: ",", omittingEmptySubsequences: false) {
            switch part {
            case "4": families.insert(.ipv4)
            case "6": families.insert(.ipv6)
            default: throw ServiceError.invalidQuery(String(value))
            }
        }
        guard !families.isEmpty else { throw ServiceError.invalidQuery(String(value)) }
        return families
    }
}
