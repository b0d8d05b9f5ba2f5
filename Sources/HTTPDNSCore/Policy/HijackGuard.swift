/// The rules an answer from the local resolver is judged by (docs/THREAT-MODEL.md, H1–H3). Comparing addresses alone
/// proves little (CDNs answer resolvers differently), so each rule is specific, and only a private answer or a
/// rewritten NXDOMAIN is `hijacked`; disagreeing addresses are `suspect`.
public struct HijackGuard: Sendable {
    public struct Configuration: Sendable {
        /// Which answers count as private or reserved. Default ``IPRange/privateAndReserved``; a test stage that
        /// stands 127.0.0.0/8 in for public addresses changes it.
        public var privateRanges: [IPRange] = IPRange.privateAndReserved
        /// Names allowed to resolve to private addresses (internal services). Default none.
        public var privateAnswerAllowList = HostPatterns()

        public init() {}
    }

    /// What the trusted source last said of the name, if anything.
    public enum TrustedView: Sendable {
        case addresses([IPAddress])
        case nameNotFound
    }

    public let configuration: Configuration

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Judges the local resolver's addresses for `host`.
    public func judge(_ addresses: [IPAddress], host: HostName, trusted: TrustedView?) -> HijackVerdict {
        if !addresses.isEmpty, !configuration.privateAnswerAllowList.matches(host),
            addresses.contains(where: { address in configuration.privateRanges.contains { $0.contains(address) } })
        {
            return HijackVerdict(level: .hijacked, reason: .privateAnswer)
        }
        switch trusted {
        case .nameNotFound? where !addresses.isEmpty:
            return HijackVerdict(level: .hijacked, reason: .nxdomainRewrite, trustedAddresses: [])
        case .addresses(let trustedAddresses)? where !addresses.isEmpty && !trustedAddresses.isEmpty:
            if Set(addresses).isDisjoint(with: trustedAddresses) {
                return HijackVerdict(level: .suspect, reason: .addressSwap, trustedAddresses: trustedAddresses)
            }
        default:
            break
        }
        return .ok
    }
}
