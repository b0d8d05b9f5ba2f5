import HTTPDNSCore
import HTTPDNSServerTransport
import HTTPDNSWire
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore

/// DNS over HTTPS (RFC 8484, docs/WIRE-FORMATS.md §2) and JSON DNS (§3), both at `/dns-query`.
struct DoHAPI: Sendable {
    let resolver: ResolverCache
    let configuration: HTTPDNSServerConfiguration
    /// Every type besides A and AAAA, relayed upstream; nil when the resolver's source cannot relay (REFUSED then).
    let relay: RelayedAnswers?

    static let messageType = "application/dns-message"
    static let jsonType = "application/dns-json"

    /// `GET /dns-query?dns=…` (wire format) or `GET /dns-query?name=…&type=…` (JSON).
    func get(_ request: Request) async throws -> Response {
        Response(await answer(try Self.getQuestion(request.uri.queryParameters)))
    }

    /// `GET /dns-query` without the router: from the cache, or (`lookingUp`) an A or AAAA question the cache missed,
    /// as a lookup whose reply is the one ``get(_:)`` would give. Everything else is the router's: requests that are
    /// not valid, and other types the relay's cache does not hold.
    func localGet(_ parameters: some QueryParameters, lookingUp: Bool) -> LocalAnswer {
        guard let question = try? Self.getQuestion(parameters) else { return .router }
        switch question {
        case .wire(let query, .relay(let asked)):
            return relay?.cachedAnswer(asked).map { .reply(Self.relayReply(query, $0)) } ?? .router
        case .jsonRelay(let asked):
            return relay?.cachedAnswer(asked).map { .reply(Self.jsonRelayReply(asked, $0, refused: false)) } ?? .router
        default:
            break
        }
        guard let target = question.target else { return .reply(question.reply(nil)) }
        guard let outcome = cachedLookUp(target.host, target.family) else {
            guard lookingUp else { return .router }
            return .lookUp { eventLoop, completion in
                let ticket = resolver.resolve(target.host, families: AddressFamilies(target.family)) { result in
                    let outcome: Outcome
                    switch result {
                    case .success(let resolution): outcome = Self.outcome(resolution, target.family)
                    case .failure(let error): outcome = Self.outcome(error)
                    }
                    guard case .wire(let query, _) = question, outcome.isNegative, let relay else {
                        // The reply is built on the event loop, not on the thread the source answered on.
                        return eventLoop.execute { completion(question.reply(outcome)) }
                    }
                    // The upstream's own negative answer, with its SOA, as ``answer(_:)`` gives it: the relay is
                    // asynchronous, and negative answers are few, so this one takes a task.
                    Task {
                        let reply = await Self.negativeReply(query, question, outcome, relay: relay)
                        eventLoop.execute { completion(reply) }
                    }
                }
                return CacheMiss.Cancellation(resolver, ticket)
            }
        }
        // A negative wire answer carries the upstream's SOA: the relay's answer, when it holds one that agrees.
        if case .wire(let query, _) = question, let relay, outcome.isNegative {
            guard let relayed = relay.cachedAnswer(query.questions[0]), Self.agrees(relayed, with: outcome) else { return .router }
            return .reply(Self.relayReply(query, relayed))
        }
        return .reply(question.reply(outcome))
    }

    private static func getQuestion(_ parameters: some QueryParameters) throws -> Question {
        if let encoded = parameters.first("dns") {
            guard let bytes = Base64URL.decode(encoded), !bytes.isEmpty else {
                throw Self.malformed("the dns parameter is not base64url")
            }
            return try wireQuestion(bytes)
        }
        if let name = parameters.first("name") {
            return try jsonQuestion(name: name, type: parameters.first("type"))
        }
        throw ServiceError.missingArgument("dns")
    }

    /// `POST /dns-query` with an `application/dns-message` body.
    func post(_ request: Request) async throws -> Response {
        let contentType = request.headers[.contentType]?.split(separator: ";").first.map { $0.filter { $0 != " " }.lowercased() }
        guard contentType == Self.messageType else {
            throw ServiceError(
                status: .unsupportedMediaType,
                code: .unsupportedMediaType,
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
                code: .bodyTooLarge,
                message: "the DNS message is larger than \(configuration.maxDNSMessageBytes) bytes",
                rejectionReason: "body_too_large"
            )
        }
        guard body.readableBytes > 0 else { throw Self.malformed("the body is empty") }
        return Response(await answer(try Self.wireQuestion(Array(buffer: body))))
    }

    private func answer(_ question: Question) async -> Reply {
        if case .wire(let query, .relay(let asked)) = question, let relay {
            return Self.relayReply(query, await relay.answer(asked))
        }
        if case .jsonRelay(let asked) = question, let relay {
            return Self.jsonRelayReply(asked, await relay.answer(asked), refused: false)
        }
        guard let target = question.target else { return question.reply(nil) }
        let outcome = await lookUp(target.host, target.family)
        if case .wire(let query, _) = question, outcome.isNegative, let relay {
            return await Self.negativeReply(query, question, outcome, relay: relay)
        }
        return question.reply(outcome)
    }

    /// NXDOMAIN or no data: the upstream's own answer, with its SOA in the authority section (RFC 2308), so the
    /// client knows how long to cache it. Without one (the relay failed, or disagrees), the service's answer.
    private static func negativeReply(_ query: DNSMessage, _ question: Question, _ outcome: Outcome, relay: RelayedAnswers) async -> Reply {
        let relayed = await relay.answer(query.questions[0])
        return agrees(relayed, with: outcome) ? relayReply(query, relayed) : question.reply(outcome)
    }

    /// Whether the relay's answer says what the service's negative `outcome` says: the same code, no records.
    private static func agrees(_ relayed: RelayedAnswers.Outcome, with outcome: Outcome) -> Bool {
        guard case .answer(let upstream, _, _, _) = relayed else { return false }
        return upstream.responseCode == outcome.code.rawValue && upstream.bytes[6] == 0 && upstream.bytes[7] == 0
    }

    /// A request understood: the lookup it needs, if any, and how to answer once the lookup is done.
    private enum Question {
        case wire(DNSMessage, QuestionKind)
        case json(HostName, AddressFamily)
        /// JSON DNS for any other type: relayed.
        case jsonRelay(DNSMessage.Question)

        var target: (host: HostName, family: AddressFamily)? {
            switch self {
            case .wire(_, .resolve(let host, let family)), .json(let host, let family): (host, family)
            case .wire, .jsonRelay: nil
            }
        }

        func reply(_ outcome: Outcome?) -> Reply {
            switch self {
            case .wire(let message, let kind): DoHAPI.wireReply(message, kind, outcome)
            case .json(let host, let family): DoHAPI.jsonReply(host, family, outcome!)
            // Answered by `jsonRelayReply`; here only without a source that relays.
            case .jsonRelay(let question): DoHAPI.jsonRelayReply(question, .failure(ResolutionError(.refused, "no relay")), refused: true)
            }
        }
    }

    // MARK: - Wire format

    private static func wireQuestion(_ bytes: [UInt8]) throws -> Question {
        let message: DNSMessage
        do {
            message = try DNSMessage(parsingQuery: bytes)
        } catch {
            throw Self.malformed(error.reason)
        }
        guard !message.isResponse else { throw Self.malformed("the message is a response, not a query") }
        return .wire(message, classify(message.opcode, message.questions.count, message.questions.first))
    }

    /// The response to `query`: its ID and question, with the flags the service sets.
    private static func response(to query: DNSMessage) -> DNSMessage {
        var message = query
        message.isResponse = true
        message.recursionAvailable = true
        // Flags the service does not set: it is no authority, never truncates over HTTP, and does not validate.
        message.isAuthoritative = false
        message.isTruncated = false
        message.authenticData = false
        message.checkingDisabled = false
        if message.questions.count > 1 { message.questions = [message.questions[0]] }
        return message
    }

    /// The response message; `outcome` is the lookup's for a `.resolve` question, unused for the others.
    private static func wireReply(_ query: DNSMessage, _ kind: QuestionKind, _ outcome: Outcome?) -> Reply {
        var message = response(to: query)
        var maxAge: UInt32 = 0
        switch kind {
        case .formatError:
            message.responseCode = .formatError
        case .notImplemented:
            message.responseCode = .notImplemented
        case .refused, .relay:
            // A type the service would relay, without a source that relays: not this service's to answer.
            message.responseCode = .refused
        case .resolve:
            let outcome = outcome!
            message.responseCode = outcome.code
            let name = message.questions[0].name
            message.answers = outcome.addresses.map { DNSMessage.Record(name: name, address: $0, ttlSeconds: outcome.ttlSeconds) }
            maxAge = outcome.ttlSeconds
        }
        return encodedReply(message, maxAge: maxAge)
    }

    /// The upstream's answer for a relayed type under the client's ID: its bytes as they came, every section kept,
    /// with the ID, the flags the service sets, and each TTL counted down by the answer's age in the cache (or the
    /// stale TTL for a stale answer). An EDNS OPT record is added when the client sent one and the answer has none.
    private static func relayReply(_ query: DNSMessage, _ outcome: RelayedAnswers.Outcome) -> Reply {
        guard case .answer(let upstream, let age, let ttlLeft, let stale) = outcome else {
            var message = response(to: query)
            message.responseCode = .serverFailure
            return encodedReply(message, maxAge: 0)
        }
        var (bytes, smallestTTL) = agedBytes(upstream, age: age, ttlLeft: ttlLeft, stale: stale)
        bytes[0] = UInt8(truncatingIfNeeded: query.id >> 8)
        bytes[1] = UInt8(truncatingIfNeeded: query.id)
        // QR, the opcode as it came (QUERY), RD as the client asked; RA, CD as the client asked (RFC 6840 §5.9), and
        // the upstream's response code. Not authoritative, never truncated over HTTP, no DNSSEC claims.
        bytes[2] = 0x80 | (bytes[2] & 0x78) | (query.recursionDesired ? 0x01 : 0)
        bytes[3] = 0x80 | (query.checkingDisabled ? 0x10 : 0) | (bytes[3] & 0x0F)
        // The question as this client spelled it: the cache holds the first asker's spelling (the same name, its
        // ASCII letters maybe in another case, so the same length), and names pointing back to it follow.
        let asked = Self.wireName(query.questions[0].name)
        let stored = bytes.count >= 12 + asked.count ? bytes[12..<(12 + asked.count)] : []
        if stored.count == asked.count, stored.elementsEqual(asked, by: { $0 | 0x20 == $1 | 0x20 || $0 == $1 }) {
            bytes.replaceSubrange(12..<(12 + asked.count), with: asked)
        }
        if query.hasEDNS, !upstream.hasEDNS {
            // OPT: root owner, type 41, payload 1232, no extended code, version 0, no flags, no options.
            bytes += [0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0]
            let additional = (Int(bytes[10]) << 8 | Int(bytes[11])) + 1
            bytes[10] = UInt8(truncatingIfNeeded: additional >> 8)
            bytes[11] = UInt8(truncatingIfNeeded: additional)
        }
        let code = DNSMessage.ResponseCode(rawValue: upstream.responseCode)
        // Never fresher than the records say (RFC 8484 §5.1): the cache keeps an answer at least a few seconds, its
        // records may say less.
        return Reply(
            contentType: Self.messageType,
            cacheControl: code == .serverFailure ? .noStore : .maxAge(min(ttlLeft, smallestTTL ?? ttlLeft)),
            body: ByteBuffer(bytes: bytes)
        )
    }

    /// The answer's bytes with each TTL counted down by `age` (or, stale, at most `ttlLeft`), and the smallest TTL
    /// after that, if there is a record.
    static func agedBytes(_ answer: RelayedAnswers.Answer, age: UInt32, ttlLeft: UInt32, stale: Bool) -> (bytes: [UInt8], smallestTTL: UInt32?) {
        var bytes = answer.bytes
        var smallest: UInt32?
        for offset in answer.ttlOffsets {
            let ttl = bytes[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let aged = stale ? min(ttl, ttlLeft) : ttl - min(age, ttl)
            smallest = min(smallest ?? aged, aged)
            for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: aged >> (24 - 8 * UInt32(index))) }
        }
        return (bytes, smallest)
    }

    /// `name` in wire form, uncompressed (its labels as they are, then the root).
    private static func wireName(_ name: String) -> [UInt8] {
        let trimmed = name.hasSuffix(".") ? Substring(name.dropLast()) : Substring(name)
        guard !trimmed.isEmpty else { return [0] }
        return trimmed.split(separator: ".", omittingEmptySubsequences: false).flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }

    private static func encodedReply(_ message: DNSMessage, maxAge: UInt32) -> Reply {
        var message = message
        let bytes: [UInt8]
        do {
            bytes = try message.encoded()
        } catch {
            // Only an answer too large for one DNS message gets here: SERVFAIL, as a resolver would say it.
            message.answers = []
            message.authorities = []
            message.additionals = []
            message.responseCode = .serverFailure
            bytes = (try? message.encoded()) ?? []
        }
        return Reply(
            contentType: Self.messageType,
            cacheControl: message.responseCode == .serverFailure ? .noStore : .maxAge(maxAge),
            body: ByteBuffer(bytes: bytes)
        )
    }

    private enum QuestionKind {
        case formatError, notImplemented, refused
        case resolve(HostName, AddressFamily)
        /// Any other type of class IN: relayed upstream as it is.
        case relay(DNSMessage.Question)
    }

    private static func classify(_ opcode: UInt8, _ count: Int, _ question: DNSMessage.Question?) -> QuestionKind {
        guard opcode == 0, count == 1, let question else { return count == 1 ? .notImplemented : .formatError }
        guard question.recordClass == 1 else { return .notImplemented }
        let family: AddressFamily
        switch question.type {
        case .a: family = .ipv4
        case .aaaa: family = .ipv6
        default: return RelayedAnswers.canRelay(question.name) ? .relay(question) : .refused
        }
        // Names that are not host names (underscores, IP literals) are not ours to answer.
        guard let host = try? HostName(question.name) else { return .refused }
        return .resolve(host, family)
    }

    // MARK: - JSON

    private static func jsonQuestion(name: Substring, type: Substring?) throws -> Question {
        switch type?.uppercased() {
        case nil, "A", "1": return .json(try NativeAPI.hostName(name), .ipv4)
        case "AAAA", "28": return .json(try NativeAPI.hostName(name), .ipv6)
        case let text?:
            guard let recordType = DNSRecordType(presentation: text) else {
                throw ServiceError(
                    status: .badRequest,
                    code: .invalidQuery,
                    message: "type must be a type's name (MX, TXT …), its number (1 to 65535) or TYPEn; got '\(type ?? "")'",
                    rejectionReason: "invalid_query"
                )
            }
            return .jsonRelay(DNSMessage.Question(name: try dnsName(name), type: recordType))
        }
    }

    /// A name to relay a question for: any DNS name (underscores allowed), not only a host name.
    private static func dnsName(_ text: Substring) throws -> String {
        let name = text.hasSuffix(".") ? text.dropLast() : text
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let valid = !name.isEmpty && name.utf8.count <= 253
            && labels.allSatisfy { !$0.isEmpty && $0.utf8.count <= 63 && $0.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\\") } }
        guard valid else {
            throw ServiceError(
                status: .badRequest,
                code: .invalidHost,
                message: "name must be a DNS name: labels of 1 to 63 printable bytes, at most 253 in all",
                rejectionReason: "invalid_host"
            )
        }
        return String(name)
    }

    /// JSON DNS for a relayed question: the upstream's records, each TTL counted down, in presentation form.
    private static func jsonRelayReply(_ question: DNSMessage.Question, _ outcome: RelayedAnswers.Outcome, refused: Bool) -> Reply {
        var members: [(String, JSON)] = []
        var maxAge: UInt32 = 0
        var code = DNSMessage.ResponseCode.serverFailure
        var sections: [(String, [DNSMessage.Record])] = []
        if refused {
            code = .refused
        } else if case .answer(let upstream, let age, let ttlLeft, let stale) = outcome {
            code = DNSMessage.ResponseCode(rawValue: upstream.responseCode)
            maxAge = ttlLeft
            let (bytes, smallestTTL) = agedBytes(upstream, age: age, ttlLeft: ttlLeft, stale: stale)
            maxAge = min(ttlLeft, smallestTTL ?? ttlLeft)
            if let message = try? DNSMessage(parsing: bytes) {
                sections = [("Answer", message.answers), ("Authority", message.authorities)]
            } else {
                code = .serverFailure
            }
        }
        members += [
            ("Status", .integer(Int(code.rawValue))),
            ("TC", .bool(false)), ("RD", .bool(true)), ("RA", .bool(true)), ("AD", .bool(false)), ("CD", .bool(false)),
            ("Question", .array([.object([("name", .string(question.name + ".")), ("type", .integer(Int(question.type.rawValue)))])])),
        ]
        for (section, records) in sections where !records.isEmpty {
            members.append(
                (
                    section,
                    .array(
                        records.map { record in
                            .object([
                                ("name", .string(record.name.hasSuffix(".") ? record.name : record.name + ".")),
                                ("type", .integer(Int(record.type.rawValue))),
                                ("TTL", .integer(Int(record.ttlSeconds))),
                                ("data", .string(RecordPresentation.text(record))),
                            ])
                        }
                    )
                )
            )
        }
        return Reply(
            contentType: Self.jsonType,
            cacheControl: code == .serverFailure ? .noStore : .maxAge(maxAge),
            body: ByteBuffer(string: JSON.object(members).text)
        )
    }

    private static func jsonReply(_ host: HostName, _ family: AddressFamily, _ outcome: Outcome) -> Reply {
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
        return Reply(
            contentType: Self.jsonType,
            cacheControl: outcome.code == .serverFailure ? .noStore : .maxAge(outcome.ttlSeconds),
            body: ByteBuffer(string: JSON.object(members).text)
        )
    }

    // MARK: - Resolution

    private struct Outcome {
        var code: DNSMessage.ResponseCode
        var addresses: [IPAddress]
        var ttlSeconds: UInt32

        /// NXDOMAIN, or NOERROR without an address.
        var isNegative: Bool { code == .nameError || (code == .noError && addresses.isEmpty) }
    }

    /// One family of `host` as DNS puts it: NOERROR with addresses (maybe none), NXDOMAIN, or SERVFAIL when the
    /// upstream failed and nothing could be served stale.
    private func lookUp(_ host: HostName, _ family: AddressFamily) async -> Outcome {
        do {
            return Self.outcome(try await resolver.resolve(host, families: AddressFamilies(family)), family)
        } catch {
            return Self.outcome(error)
        }
    }

    /// ``lookUp(_:_:)`` from the cache alone; nil when upstream must be asked.
    private func cachedLookUp(_ host: HostName, _ family: AddressFamily) -> Outcome? {
        do {
            return try resolver.cachedResolution(host, families: AddressFamilies(family)).map { Self.outcome($0, family) }
        } catch let error as ResolutionError where error.code.isNegativeAnswer {
            return Self.outcome(error)
        } catch {
            return nil
        }
    }

    private static func outcome(_ resolution: Resolution, _ family: AddressFamily) -> Outcome {
        let addresses = family == .ipv4 ? resolution.ipv4.map(IPAddress.v4) : resolution.ipv6.map(IPAddress.v6)
        // A stale NXDOMAIN stays NXDOMAIN.
        let code: DNSMessage.ResponseCode = resolution.negativeAnswer == .nameNotFound ? .nameError : .noError
        return Outcome(code: code, addresses: addresses, ttlSeconds: resolution.ttlSeconds)
    }

    private static func outcome(_ error: any Error) -> Outcome {
        guard let error = error as? ResolutionError else { return Outcome(code: .serverFailure, addresses: [], ttlSeconds: 0) }
        switch error.code {
        case .nameNotFound: return Outcome(code: .nameError, addresses: [], ttlSeconds: error.ttlSeconds ?? 0)
        case .noAddress: return Outcome(code: .noError, addresses: [], ttlSeconds: error.ttlSeconds ?? 0)
        default: return Outcome(code: .serverFailure, addresses: [], ttlSeconds: 0)
        }
    }

    private static func malformed(_ reason: String) -> ServiceError {
        ServiceError(status: .badRequest, code: .malformedQuery, message: "malformed DNS query: \(reason)", rejectionReason: "malformed_query")
    }
}
