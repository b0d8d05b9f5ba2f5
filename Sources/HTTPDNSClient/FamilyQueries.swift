import HTTPDNSCore
import HTTPDNSSynchronization
import HTTPDNSWire

/// What DoH and DoT share in asking for addresses: a DNS query (ID 0) per family, and both families at once.
enum FamilyQueries {
    /// Asks for each family of `families` through `lookUp`: in this task when there is one, both at once when two.
    static func answer(
        _ host: HostName,
        _ families: AddressFamilies,
        lookUp: @escaping @Sendable (AddressFamily) async throws(ResolutionError) -> FamilyAnswer<IPAddress>
    ) async throws -> SourceAnswer {
        guard !families.isEmpty else { throw ResolutionError.noFamilies(host) }
        // One family: asked in this task, with no child task to make.
        if families == .ipv4 { return sourceAnswer(ipv4: try await lookUp(.ipv4)) }
        if families == .ipv6 { return sourceAnswer(ipv6: try await lookUp(.ipv6)) }
        async let ipv4 = lookUp(.ipv4)
        async let ipv6 = lookUp(.ipv6)
        return sourceAnswer(ipv4: try await ipv4, ipv6: try await ipv6)
    }

    /// Each family's answer, its addresses of that family.
    static func sourceAnswer(ipv4: FamilyAnswer<IPAddress>? = nil, ipv6: FamilyAnswer<IPAddress>? = nil) -> SourceAnswer {
        SourceAnswer(ipv4: ipv4?.map { $0.compactMap(\.v4) }, ipv6: ipv6?.map { $0.compactMap(\.v6) })
    }

    /// The query for `host` and `family`'s record type, ID 0, recursion desired, and that type.
    static func query(_ host: HostName, _ family: AddressFamily) throws(ResolutionError) -> (bytes: [UInt8], type: DNSRecordType) {
        let type = DNSRecordType(rawValue: family.recordType)
        do {
            return (try DNSMessage(id: 0, recursionDesired: true, questions: [.init(name: host.value, type: type)]).encoded(), type)
        } catch {
            throw ResolutionError(.internalError, "the query for \(host) could not be encoded: \(error)", cause: error)
        }
    }
}

/// The families of one lookup a source's `startQuery` began with both asked (``DoTSource``, ``DoHSource``), each settled
/// on its own (on a connection's event loop, or in a task for one that went on to the failover): the last one settled
/// completes the lookup.
final class FamilyLookups: Sendable {
    private struct State {
        var ipv4: Result<FamilyAnswer<IPAddress>, ResolutionError>?
        var ipv6: Result<FamilyAnswer<IPAddress>, ResolutionError>?
        var answeredOnConnection = 0
        /// The outcome was handed out: later families are not waited for.
        var done = false
    }

    private let families: [AddressFamily]
    private let state = Mutex(State())

    init(families: [AddressFamily]) {
        self.families = families
    }

    /// Settles `family` (`onConnection`: answered on the open connection, for ``DoTSource``'s count).
    /// - Returns: the lookup's outcome once it is known, exactly once: the answers when every family has one, or a
    ///   family's failure as soon as every family asked before it has answered (A's failure before AAAA's, as
    ///   ``FamilyQueries/answer(_:_:lookUp:)`` reports them, without waiting for AAAA); and whether every family was
    ///   answered on the connection. Nil while the outcome is open, and for a family settled after it was handed out.
    func settle(
        _ family: AddressFamily,
        _ result: Result<FamilyAnswer<IPAddress>, ResolutionError>,
        onConnection: Bool = false
    ) -> (outcome: Result<SourceAnswer, ResolutionError>, everyOnConnection: Bool)? {
        state.withLock { state in
            guard !state.done else { return nil }
            switch family {
            case .ipv4: state.ipv4 = result
            case .ipv6: state.ipv6 = result
            }
            if onConnection { state.answeredOnConnection += 1 }
            var answers: (ipv4: FamilyAnswer<IPAddress>?, ipv6: FamilyAnswer<IPAddress>?)
            for asked in families {
                switch asked == .ipv4 ? state.ipv4 : state.ipv6 {
                case nil:
                    return nil
                case .failure(let error):
                    state.done = true
                    return (.failure(error), false)
                case .success(let answer):
                    if asked == .ipv4 { answers.ipv4 = answer } else { answers.ipv6 = answer }
                }
            }
            state.done = true
            let outcome = FamilyQueries.sourceAnswer(ipv4: answers.ipv4, ipv6: answers.ipv6)
            return (.success(outcome), state.answeredOnConnection == families.count)
        }
    }
}
