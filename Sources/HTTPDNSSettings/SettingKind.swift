import Configuration
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSWire

/// The kinds of value a setting takes, and how each is read and checked from a file's JSON or from text (an
/// environment variable or a flag). A value that passes is handed to swift-configuration as its typed content.
public enum SettingKind: Sendable, Hashable {
    /// A non-empty string.
    case text
    /// `HOST:PORT` or `[IPv6]:PORT`.
    case hostAndPort
    /// DNS servers, `IP[:PORT]` or `[IPv6]:PORT` each: a JSON array or string in a file, comma-separated text in
    /// the environment, a repeated flag.
    case dnsServers
    /// The upstreams of `httpdns serve`, listed as ``dnsServers`` are: plain DNS, `IP[:PORT]`, DNS over TLS,
    /// `tls://IP[:PORT][#NAME]`, or DNS over HTTPS, `https://IP[:PORT][/PATH][#NAME]`; `#NAME` the name the server's
    /// certificate must hold (without it, the address).
    case upstreams
    /// HTTPDNS service URLs, `https://IP[:PORT][/PATH]` each (``ServiceEndpoint``), or DNS-over-TLS servers,
    /// `tls://IP[:PORT]` each (``DoTEndpoint``), listed as ``dnsServers`` are; one list holds one kind, never both.
    case serviceURLs
    /// SPKI SHA-256 pins, `sha256//BASE64` each (``SPKIPin``), listed as ``dnsServers`` are.
    case pins
    /// Host names (``HostName``), listed as ``dnsServers`` are.
    case hostNames
    /// Host patterns (``HostPatterns``): a name, or `.example.com` for every name under it (not the name itself); listed as
    /// ``dnsServers`` are.
    case hostPatterns
    /// `true` or `false` (`1` and `0` in text).
    case flag
    /// A whole number greater than 0.
    case positiveInteger
    /// A number ≥ 0.
    case nonNegativeNumber
    /// A whole number of seconds ≥ 0 that fits in 32 bits.
    case seconds
    /// One of a fixed list of words.
    case choice([String])
    /// Words from a fixed list, listed as ``dnsServers`` are.
    case choices([String])
    /// The service's accounts: an object in the file, or the path of a JSON file holding one.
    case accounts

    /// Whether the value is a list: a JSON array in the file, comma-separated in a variable, a repeated flag.
    var isList: Bool {
        switch self {
        case .dnsServers, .upstreams, .serviceURLs, .pins, .hostNames, .hostPatterns, .choices: true
        default: false
        }
    }

    /// Reads a value from the configuration file.
    func read(json value: JSONValue, from origin: SettingOrigin, isSecret: Bool) throws(SettingError) -> ConfigContent {
        switch (self, value) {
        case (.dnsServers, .array(let elements)), (.upstreams, .array(let elements)), (.serviceURLs, .array(let elements)),
            (.pins, .array(let elements)), (.hostNames, .array(let elements)), (.hostPatterns, .array(let elements)),
            (.choices, .array(let elements)):
            var texts: [String] = []
            for element in elements {
                guard case .string(let text) = element else { throw SettingError(origin, "must be a list of strings, not \(element.kind) in it") }
                texts.append(text)
            }
            return try checkedList(texts, from: origin)
        case (.dnsServers, .string(let text)), (.serviceURLs, .string(let text)), (.pins, .string(let text)), (.hostNames, .string(let text)),
            (.upstreams, .string(let text)), (.hostPatterns, .string(let text)), (.choices, .string(let text)):
            return try checkedList([text], from: origin)
        case (.flag, .bool(let flag)):
            return .bool(flag)
        case (.positiveInteger, .number(let number)), (.nonNegativeNumber, .number(let number)), (.seconds, .number(let number)):
            return try checkedNumber(number, text: Self.format(number), from: origin)
        case (.accounts, .object(let object)):
            return .bytes(try Self.accounts(object, from: origin))
        case (.accounts, .string(let path)):
            return .bytes(try Self.accountsFile(path, from: origin))
        case (_, .string(let text)):
            return try read(text: text, from: origin, isSecret: isSecret)
        default:
            throw SettingError(origin, "must be \(expectation), not \(value.kind)")
        }
    }

    /// Reads a value from the environment or a flag.
    func read(text: String, from origin: SettingOrigin, isSecret: Bool) throws(SettingError) -> ConfigContent {
        let shown = isSecret ? "(secret)" : "'\(text)'"
        switch self {
        case .text:
            guard !text.isEmpty else { throw SettingError(origin, "must be a non-empty string") }
            return .string(text)
        case .hostAndPort:
            guard (try? HostAndPort(text)) != nil else {
                throw SettingError(origin, "must be HOST:PORT (for IPv6, [ADDRESS]:PORT), not \(shown)")
            }
            return .string(text)
        case .dnsServers, .upstreams, .serviceURLs, .pins, .hostNames, .hostPatterns, .choices:
            // Comma-separated; empty entries are skipped, so an empty value names none (for DNS servers, the
            // system's).
            return try checkedList(text.split(separator: ",").map(String.init), from: origin)
        case .flag:
            switch text {
            case "true", "1": return .bool(true)
            case "false", "0": return .bool(false)
            default: throw SettingError(origin, "must be true or false (or 1 or 0), not \(shown)")
            }
        case .positiveInteger:
            guard let number = Int(text), number > 0 else { throw SettingError(origin, "must be \(expectation), not \(shown)") }
            return .int(number)
        case .nonNegativeNumber, .seconds:
            guard let number = Double(text), number.isFinite else { throw SettingError(origin, "must be \(expectation), not \(shown)") }
            return try checkedNumber(number, text: text, from: origin)
        case .choice(let words):
            guard words.contains(text) else { throw SettingError(origin, "must be \(Self.list(words)), not \(shown)") }
            return .string(text)
        case .accounts:
            return .bytes(try Self.accountsFile(text, from: origin))
        }
    }

    private func checkedNumber(_ number: Double, text: String, from origin: SettingOrigin) throws(SettingError) -> ConfigContent {
        switch self {
        case .positiveInteger:
            guard number > 0, let whole = Int(exactly: number) else {
                throw SettingError(origin, "must be a positive whole number, not '\(text)'")
            }
            return .int(whole)
        case .seconds:
            guard number >= 0, number == number.rounded(), number <= Double(UInt32.max) else {
                throw SettingError(origin, "must be a whole number of seconds ≥ 0, not '\(text)'")
            }
            return .int(Int(number))
        default:
            guard number >= 0 else { throw SettingError(origin, "must be a number ≥ 0, not '\(text)'") }
            return .double(number)
        }
    }

    /// What a value must be, for error messages.
    var expectation: String {
        switch self {
        case .text: "a non-empty string"
        case .hostAndPort: "HOST:PORT"
        case .dnsServers: "a list of DNS servers, IP[:PORT] each"
        case .upstreams: "a list of upstreams, IP[:PORT] (plain DNS), tls://IP[:PORT][#NAME] (DNS over TLS) or https://IP[:PORT][/PATH][#NAME] (DNS over HTTPS) each"
        case .serviceURLs: "a list of service URLs, https://IP[:PORT][/PATH] each, or of DNS-over-TLS servers, tls://IP[:PORT] each"
        case .pins: "a list of SPKI SHA-256 pins, sha256//BASE64 each"
        case .hostNames: "a list of host names"
        case .hostPatterns: "a list of host patterns (a name, or .example.com for every name under it)"
        case .flag: "true or false"
        case .positiveInteger: "a positive whole number"
        case .nonNegativeNumber: "a number ≥ 0"
        case .seconds: "a whole number of seconds ≥ 0"
        case .choice(let words): Self.list(words)
        case .choices(let words): "a list of \(Self.list(words))"
        case .accounts: "an object of accounts, or the path of a JSON file holding one"
        }
    }

    private static func list(_ words: [String]) -> String {
        words.count < 2 ? words.joined() : words.dropLast().joined(separator: ", ") + " or " + words.last!
    }

    private static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }

    /// The items of a list kind, each checked and written in its canonical form.
    private func checkedList(_ texts: [String], from origin: SettingOrigin) throws(SettingError) -> ConfigContent {
        var items: [String] = []
        for text in texts {
            let trimmed = text.trimmingWhitespace
            do {
                switch self {
                case .choices(let words):
                    guard words.contains(trimmed) else {
                        throw SettingError(origin, "must be a list of \(Self.list(words)), not '\(trimmed)' in it")
                    }
                    items.append(trimmed)
                case .serviceURLs: items.append(try Self.serviceURL(trimmed))
                case .upstreams: items.append(try UpstreamServer(parsing: trimmed).description)
                case .pins: items.append(try SPKIPin(parsing: trimmed).description)
                case .hostNames: items.append(try HostName(trimmed).value)
                case .hostPatterns:
                    _ = try HostPatterns([trimmed])
                    items.append(trimmed)
                default: items.append(try DNSServerAddress(parsing: trimmed).description)
                }
            } catch let error as SettingError {
                throw error
            } catch {
                let noun =
                    switch self {
                    case .serviceURLs where trimmed.hasPrefix("tls://"): "a DNS-over-TLS server"
                    case .serviceURLs: "a service URL"
                    case .pins: "a pin"
                    case .hostNames: "a host name"
                    case .hostPatterns: "a host pattern"
                    default: "a server"
                    }
                throw SettingError(.invalidValue, origin, "holds \(noun) that cannot be used: \(error)", cause: error)
            }
        }
        if self == .serviceURLs, let tls = items.first(where: { $0.hasPrefix("tls://") }), let https = items.first(where: { !$0.hasPrefix("tls://") }) {
            throw SettingError(
                .inconsistent,
                origin,
                "mixes DNS-over-TLS servers (\(tls)) and HTTPDNS services (\(https)): "
                    + "one command asks either tls:// servers or https:// services, not both"
            )
        }
        return .stringArray(items)
    }

    /// A service URL (`https://…`, or `http://…` written out) or a DNS-over-TLS server (`tls://…`), in its canonical
    /// form.
    private static func serviceURL(_ text: String) throws(ServiceEndpointError) -> String {
        if text.hasPrefix("tls://") { return try DoTEndpoint(parsing: text).description }
        guard text.hasPrefix("https://") || text.hasPrefix("http://") else {
            throw ServiceEndpointError(
                .invalidScheme,
                text: text,
                reason: "must start with https:// (an HTTPDNS service; http:// only written out) or tls:// (a DNS-over-TLS server)"
            )
        }
        return try ServiceEndpoint(parsing: text).description
    }
}

extension String {
    var trimmingWhitespace: String {
        var text = Substring(self)
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        return String(text)
    }
}
