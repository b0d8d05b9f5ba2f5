import HTTPDNSCore
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
