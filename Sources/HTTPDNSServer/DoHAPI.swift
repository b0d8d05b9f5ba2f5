import HTTPDNSCore
import HTTPTypes
import Hummingbird
import NIOCore

/// DNS over HTTPS (RFC 8484, WIRE-FORMATS.md §2) and JSON DNS (§3), both at `/dns-query`.
struct DoHAPI: Sendable {
    let resolver: ResolverCache
    let configuration: HTTPDNSServerConfiguration

    static let messageType = "application/dns-message"
    static let jsonType = "application/dns-json"

    /// `GET /dns-query?dns=…` (wire format) or `GET /dns-query?name=…&type=…` (JSON).
    func get(_ request: Request) async throws -> Response {
        let parameters = request.uri.queryParameters
        if let encoded = parameters["dns"] {
            guard let bytes = Base64URL.decode(encoded), !bytes.isEmpty else {
                throw Self.malformed("the dns parameter is not base64url")
            }
            return try await answerWire(bytes)
        }
        if let name = parameters["name"] {
            return try await answerJSON(name: name, type: parameters["type"])
        }
        throw ServiceError.missingArgument("dns")
    }

    /// `POST /dns-query` with an `application/dns-message` body.
    func post(_ request: Request) async throws -> Response {
        let contentType = request.headers[.contentType]?.split(separator: ";").first.map { $0.filter { $0 != " " }.lowercased() }
        guard contentType == Self.messageType else {
            throw ServiceError(
                status: .unsupportedMediaType,
                code: "UnsupportedMediaType",
                message: "POST /dns-query takes \(Self.messageType), not \(contentType ?? "no content type")",
                rejectionReason: "content_type"
            )
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: configuration.maxDNSMessageBytes)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw ServiceError(
                status: .contentTooLarge,
                code: "BodyTooLarge",
                message: "the DNS message is larger than \(configuration.maxDNSMessageBytes) bytes",
                rejectionReason: "body_too_large"
            )
        }
        guard body.readableBytes > 0 else { throw Self.malformed("the body is empty") }
        return try await answerWire(Array(buffer: body))
    }

    // MARK: - Wire format

    private func answerWire(_ bytes: [UInt8]) async throws -> Response {
        var message: DNSMessage
        do {
            message = try DNSMessage(parsingQuery: bytes)
        } catch {
            throw Self.malformed(error.reason)
        }
        guard !message.isResponse else { throw Self.malformed("the message is a response, not a query") }
        let kind = Self.classify(message.opcode, message.questions.count, message.questions.first)
        message.isResponse = true
        message.recursionAvailable = true
        message.questions = Array(message.questions.prefix(1))
        var maxAge: UInt32 = 0
        switch kind {
        case .formatError:
            message.responseCode = .formatError
        case .notImplemented:
            message.responseCode = .notImplemented
        case .refused:
            message.responseCode = .refused
        case .resolve(let host, let family):
            let outcome = await lookUp(host, family)
            message.responseCode = outcome.code
            message.answers = outcome.addresses.map { DNSMessage.Answer(address: $0, ttlSeconds: outcome.ttlSeconds) }
            maxAge = outcome.ttlSeconds
        }
        var headers: HTTPFields = [.contentType: Self.messageType]
        headers[.cacheControl] = message.responseCode == .serverFailure ? "no-store" : "max-age=\(maxAge)"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: message.encoded())))
    }

    private enum QuestionKind {
        case formatError, notImplemented, refused
        case resolve(HostName, AddressFamily)
    }

    private static func classify(_ opcode: UInt8, _ count: Int, _ question: DNSMessage.Question?) -> QuestionKind {
        guard opcode == 0, count == 1, let question else { return count == 1 ? .notImplemented : .formatError }
        guard question.recordClass == 1 else { return .notImplemented }
        let family: AddressFamily
        switch question.type {
        case 1: family = .ipv4
        case 28: family = .ipv6
        default: return .notImplemented
        }
        // Names that are not host names (underscores, IP literals) are not ours to answer.
        guard let host = try? HostName(question.name) else { return .refused }
        return .resolve(host, family)
    }

    // MARK: - JSON

    private func answerJSON(name: Substring, type: Substring?) async throws -> Response {
        let family: AddressFamily
        switch type?.uppercased() {
        case nil, "A", "1": family = .ipv4
        case "AAAA", "28": family = .ipv6
        default:
            throw ServiceError(
                status: .badRequest,
                code: "InvalidQuery",
                message: "type must be A, AAAA, 1 or 28; got '\(type ?? "")'",
                rejectionReason: "invalid_query"
            )
        }
        let host = try NativeAPI.hostName(name)
        let outcome = await lookUp(host, family)
        let fqdn = host.fullyQualified
        var members: [(String, JSON)] = [
            ("Status", .integer(Int(outcome.code.rawValue))),
            ("TC", .bool(false)), ("RD", .bool(true)), ("RA", .bool(true)), ("AD", .bool(false)), ("CD", .bool(false)),
            ("Question", .array([.object([("name", .string(fqdn)), ("type", .integer(Int(family.recordType)))])])),
        ]
        if !outcome.addresses.isEmpty {
            members.append(
                (
                    "Answer",
                    .array(
                        outcome.addresses.map { address in
                            .object([
                                ("name", .string(fqdn)),
                                ("type", .integer(Int(family.recordType))),
                                ("TTL", .integer(Int(outcome.ttlSeconds))),
                                ("data", .string(address.description)),
                            ])
                        }
                    )
                )
            )
        }
        var headers: HTTPFields = [.contentType: Self.jsonType]
        headers[.cacheControl] = outcome.code == .serverFailure ? "no-store" : "max-age=\(outcome.ttlSeconds)"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: JSON.object(members).text)))
    }

    // MARK: - Resolution

    private struct Outcome {
        var code: DNSMessage.ResponseCode
        var addresses: [IPAddress]
        var ttlSeconds: UInt32
    }

    /// One family of `host` as DNS puts it: NOERROR with addresses (maybe none), NXDOMAIN, or SERVFAIL when the
    /// upstream failed and nothing could be served stale.
    private func lookUp(_ host: HostName, _ family: AddressFamily) async -> Outcome {
        do {
            let resolution = try await resolver.resolve(host, families: AddressFamilies(family))
            let addresses = family == .ipv4 ? resolution.ipv4.map(IPAddress.v4) : resolution.ipv6.map(IPAddress.v6)
            // A stale NXDOMAIN stays NXDOMAIN.
            let code: DNSMessage.ResponseCode = resolution.negativeAnswer == .nameNotFound ? .nameError : .noError
            return Outcome(code: code, addresses: addresses, ttlSeconds: resolution.ttlSeconds)
        } catch let error as ResolutionError where error.code == .nameNotFound {
            return Outcome(code: .nameError, addresses: [], ttlSeconds: error.ttlSeconds ?? 0)
        } catch let error as ResolutionError where error.code == .noAddress {
            return Outcome(code: .noError, addresses: [], ttlSeconds: error.ttlSeconds ?? 0)
        } catch {
            return Outcome(code: .serverFailure, addresses: [], ttlSeconds: 0)
        }
    }

    private static func malformed(_ reason: String) -> ServiceError {
        ServiceError(status: .badRequest, code: "MalformedQuery", message: "malformed DNS query: \(reason)", rejectionReason: "malformed_query")
    }
}
