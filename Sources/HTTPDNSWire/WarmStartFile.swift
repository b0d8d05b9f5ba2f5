import FoundationEssentials
import HTTPDNSCore

/// The file a warm start is saved to and loaded from: `ResolverCache.entries()` as JSON,
/// `{"version":1,"entries":[{"host":"api.example","ipv4":{"addresses":["192.0.2.1"],"ttl":60},"ipv6":{"negative":"noData","ttl":30}}]}`.
///
/// Saving writes a new file and renames it over the old one, so a crash or a full disk never leaves half a file.
/// Loading is strict: a file that is not this format is refused whole, saying why, and the caller starts cold.
public enum WarmStartFile {
    /// Writes `entries` to `path`.
    /// - Throws: ``WarmStartError`` when the file cannot be written (a missing directory, a full disk).
    public static func save(_ entries: [CachedEntry], to path: String) throws(WarmStartError) {
        func family<Address>(_ answer: FamilyAnswer<Address>?) -> JSON? {
            switch answer {
            case .addresses(let addresses, let ttl)?:
                return .object([("addresses", .array(addresses.map { .string("\($0)") })), ("ttl", .integer(Int(ttl)))])
            case .negative(let kind, let ttl)?:
                return .object([("negative", .string(kind == .nameNotFound ? "nameNotFound" : "noData")), ("ttl", ttl.map { .integer(Int($0)) } ?? .null)])
            case nil:
                return nil
            }
        }
        let list = entries.map { entry in
            var members: [(String, JSON)] = [("host", .string(entry.host.value))]
            if let ipv4 = family(entry.ipv4) { members.append(("ipv4", ipv4)) }
            if let ipv6 = family(entry.ipv6) { members.append(("ipv6", ipv6)) }
            return JSON.object(members)
        }
        let text = JSON.object([("version", .integer(1)), ("entries", .array(list))]).text
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw WarmStartError(.unwritable, path: path, reason: "cannot be written: \(error)", cause: error)
        }
    }

    /// The largest file ``load(from:maxBytes:)`` reads by default: 256 MiB, over 1,000 bytes for each of a
    /// `ResolverCache`'s 100,000 names at most (its default `maxEntries`).
    public static let defaultMaxBytes = 256 << 20

    /// Reads the entries saved at `path`, a regular file of at most `maxBytes`.
    /// - Throws: ``WarmStartError`` when the file cannot be read (missing, not a regular file, larger than
    ///   `maxBytes`) or is not a warm-start file.
    public static func load(from path: String, maxBytes: Int = defaultMaxBytes) throws(WarmStartError) -> [CachedEntry] {
        func fail(_ reason: String, _ code: WarmStartError.Code = .invalidFormat, cause: (any Error)? = nil) -> WarmStartError {
            WarmStartError(code, path: path, reason: reason, cause: cause)
        }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, maxBytes: maxBytes)
        } catch {
            throw fail("cannot be read: \(error)", .unreadable, cause: error)
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw fail("is not JSON: \(error)", .notJSON, cause: error)
        }
        guard case .object(let file) = value, file["version"] == .number(1), case .array(let list)? = file["entries"] else {
            throw fail("is not a warm-start file of version 1")
        }
        var entries: [CachedEntry] = []
        entries.reserveCapacity(list.count)
        for (index, element) in list.enumerated() {
            let what = "entry \(index + 1)"
            guard case .object(let entry) = element, case .string(let text)? = entry["host"], let host = try? HostName(text) else {
                throw fail("\(what) has no valid host")
            }
            func family<Address>(_ key: String, _ parse: (String) -> Address?) throws(WarmStartError) -> FamilyAnswer<Address>? {
                guard let value = entry[key] else { return nil }
                guard case .object(let record) = value else { throw fail("\(what): \(key) is not an object") }
                let ttl: UInt32?
                switch record["ttl"] {
                case .number(let number)? where number >= 0 && number <= Double(UInt32.max) && number == number.rounded(): ttl = UInt32(number)
                case .null?, nil: ttl = nil
                default: throw fail("\(what): the \(key) ttl is not whole seconds")
                }
                if case .array(let texts)? = record["addresses"] {
                    var addresses: [Address] = []
                    for case .string(let text) in texts {
                        guard let address = parse(text) else { throw fail("\(what): '\(text)' is not an address of \(key)") }
                        addresses.append(address)
                    }
                    guard addresses.count == texts.count, !addresses.isEmpty, let ttl else { throw fail("\(what): \(key) needs addresses and a ttl") }
                    return .addresses(addresses, ttlSeconds: ttl)
                }
                switch record["negative"] {
                case .string("nameNotFound")?: return .negative(.nameNotFound, ttlSeconds: ttl)
                case .string("noData")?: return .negative(.noData, ttlSeconds: ttl)
                default: throw fail("\(what): \(key) is neither addresses nor a negative answer")
                }
            }
            entries.append(CachedEntry(host: host, ipv4: try family("ipv4", IPv4Address.init), ipv6: try family("ipv6", IPv6Address.init)))
        }
        return entries
    }
}

/// A warm-start file that could not be saved or loaded.
///
/// Compare errors by ``code``; the ``reason`` is for people and may change. The file system's or the JSON parser's
/// error is kept as ``cause``.
public struct WarmStartError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded identifier for the kind of failure (usable as a metric dimension). A struct, not an enum,
    /// so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case unwritable
            case unreadable
            case notJSON = "not_json"
            case invalidFormat = "invalid_format"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file cannot be written: a missing directory, a full disk. The file saved before, if any, is whole.
        public static let unwritable = Code(.unwritable)
        /// The file cannot be read: missing, not a regular file, or larger than the most that is read.
        public static let unreadable = Code(.unreadable)
        /// The file is not JSON. The parser's `JSONParseError` is the ``WarmStartError/cause``.
        public static let notJSON = Code(.notJSON)
        /// The file is JSON but not a warm-start file of version 1: an entry without a valid host, an address of the
        /// wrong family, a TTL that is not whole seconds.
        public static let invalidFormat = Code(.invalidFormat)

        /// Every code, for making one metric per code up front.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word (`not_json`), as metrics and logs write it.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The file's path, as it was given.
    public let path: String
    /// What went wrong, in a sentence fragment that follows the path: `cannot be read: …`.
    public let reason: String
    /// The error underneath, when there is one: the file system's or the JSON parser's. Not compared or hashed: two
    /// errors are the same when their code, path and reason are.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: what kind of failure this is.
    ///   - path: the file's path, as it was given.
    ///   - reason: what went wrong, in a sentence fragment that follows the path.
    ///   - cause: the error underneath, when there is one.
    public init(_ code: Code, path: String, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.path = path
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "the warm-start file \(path) \(reason)" }

    public static func == (lhs: WarmStartError, rhs: WarmStartError) -> Bool {
        lhs.code == rhs.code && lhs.path == rhs.path && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(path)
        hasher.combine(reason)
    }
}
