/// What the hijack guard makes of an answer from the local (untrusted) resolver: a level, and a reason from a fixed
/// list, so the reason can be a metric dimension.
public struct HijackVerdict: Sendable, Hashable, CustomStringConvertible {
    public enum Level: String, Sendable, Hashable, Comparable {
        case ok, suspect, hijacked

        public static func < (lhs: Level, rhs: Level) -> Bool {
            let order: [Level] = [.ok, .suspect, .hijacked]
            return order.firstIndex(of: lhs)! < order.firstIndex(of: rhs)!
        }
    }

    /// Why. A bounded set (HIJACK-MODEL.md).
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// Nothing against the answer.
        public static let none = Reason("none")
        /// H1: the trusted source says the name does not exist; the local resolver gave addresses.
        public static let nxdomainRewrite = Reason("nxdomain-rewrite")
        /// H2: the local resolver's addresses share none with the trusted source's.
        public static let addressSwap = Reason("address-swap")
        /// H3: a private or reserved address for a name not on the allow list.
        public static let privateAnswer = Reason("private-answer")
        /// H7: the trusted source could not be reached for a host that may only use it.
        public static let downgrade = Reason("downgrade")

        /// Every reason, for making one metric per reason up front.
        public static let all: [Reason] = [.none, .nxdomainRewrite, .addressSwap, .privateAnswer, .downgrade]

        public var description: String { name }
    }

    public let level: Level
    public let reason: Reason
    /// What the trusted source said, when it is what the verdict rests on (H1, H2): shown beside the local answer.
    public let trustedAddresses: [IPAddress]?

    public init(level: Level, reason: Reason, trustedAddresses: [IPAddress]? = nil) {
        self.level = level
        self.reason = reason
        self.trustedAddresses = trustedAddresses
    }

    public static let ok = HijackVerdict(level: .ok, reason: .none)

    public var description: String { level == .ok ? "ok" : "\(level.rawValue): \(reason)" }
}
