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

    /// Why. A bounded set (docs/THREAT-MODEL.md).
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        // An enum, not a String: a verdict is made on every lookup, and copying one then costs no reference count.
        private enum Base: String, Sendable, Hashable {
            case none, nxdomainRewrite = "nxdomain-rewrite", addressSwap = "address-swap", privateAnswer = "private-answer"
            case downgrade
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Nothing against the answer.
        public static var none: Reason { Reason(.none) }
        /// H1: the trusted source says the name does not exist; the local resolver gave addresses.
        public static var nxdomainRewrite: Reason { Reason(.nxdomainRewrite) }
        /// H2: the local resolver's addresses share none with the trusted source's.
        public static var addressSwap: Reason { Reason(.addressSwap) }
        /// H3: a private or reserved address for a name not on the allow list.
        public static var privateAnswer: Reason { Reason(.privateAnswer) }
        /// H7: the trusted source could not be reached for a host that may only use it.
        public static var downgrade: Reason { Reason(.downgrade) }

        /// Every reason, for making one metric per reason up front.
        public static var all: [Reason] { [.none, .nxdomainRewrite, .addressSwap, .privateAnswer, .downgrade] }

        public var description: String { base.rawValue }
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

    public static var ok: HijackVerdict { HijackVerdict(level: .ok, reason: .none) }

    public var description: String { level == .ok ? "ok" : "\(level.rawValue): \(reason)" }
}
