import HTTPDNSClient
import HTTPDNSCore

/// One upstream of `httpdns serve`, as ``SettingKind/upstreams`` reads it:
/// - plain DNS, `IP[:PORT]` (port 53 by default);
/// - DNS over TLS, `tls://IP[:PORT][#NAME]` (port 853 by default);
/// - DNS over HTTPS, `https://IP[:PORT][/PATH][#NAME]` (port 443, path `/dns-query` by default).
///
/// `#NAME` is the name the server's certificate must hold, as unbound's `forward-addr` writes it; without it, the
/// certificate must hold the address. Either way the server is given by IP: reaching it needs no DNS.
struct UpstreamServer: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case plain(DNSServerAddress)
        /// The endpoint, and the name its certificate must hold (nil: the address).
        case tls(DoTEndpoint, name: String?)
        /// The endpoint (its path as written, empty for `/dns-query`), and the name its certificate must hold.
        case https(ServiceEndpoint, name: String?)
    }

    let kind: Kind

    /// The forms an upstream takes, for messages.
    static let forms = "IP[:PORT] for plain DNS, tls://IP[:PORT][#NAME] for DNS over TLS or https://IP[:PORT][/PATH][#NAME] for DNS over HTTPS"

    /// - Throws: ``UpstreamServerError`` saying what is wrong with `text`.
    init(parsing text: String) throws(UpstreamServerError) {
        func fail(_ reason: String) -> UpstreamServerError { UpstreamServerError(text: text, reason: reason) }
        let isTLS = text.hasPrefix("tls://")
        guard isTLS || text.hasPrefix("https://") else {
            if text.hasPrefix("http://") {
                throw fail("DNS over plain HTTP is not encrypted: write https://IP[:PORT][/PATH][#NAME], or IP[:PORT] for plain DNS")
            }
            if let scheme = text.range(of: "://") {
                throw fail("'\(text[..<scheme.lowerBound])://' is not an upstream: write \(Self.forms)")
            }
            if text.contains("#") {
                throw fail("#NAME is for an encrypted upstream: write tls://IP[:PORT]#NAME or https://IP[:PORT][/PATH]#NAME")
            }
            do {
                kind = .plain(try DNSServerAddress(parsing: text))
            } catch {
                let hint =
                    error.code == .invalidAddress
                    ? "; for an encrypted upstream, the name the certificate holds goes after #: tls://IP[:PORT]#NAME" : ""
                throw UpstreamServerError(text: text, reason: error.reason + hint, cause: error)
            }
            return
        }
        let scheme = isTLS ? "tls://" : "https://"
        let parts = text.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let authority = parts[0].dropFirst(scheme.count).prefix { $0 != "/" }
        if !authority.hasPrefix("["), authority.filter({ $0 == ":" }).count > 1 {
            throw fail("an IPv6 address goes in brackets: \(scheme)[\(authority)]")
        }
        func endpointError(_ error: ServiceEndpointError) -> UpstreamServerError {
            let hint = error.code == .invalidAddress ? "; the name the certificate holds goes after #: \(scheme)IP[:PORT]#NAME" : ""
            let reason = error.reason.replacing("a service is addressed by IP", with: "an upstream is given by IP")
            return UpstreamServerError(text: text, reason: reason + hint, cause: error)
        }
        if !isTLS, parts[0].dropFirst(scheme.count).contains(",") {
            throw fail("a comma cannot be in an upstream (lists of upstreams are split at commas)")
        }
        var name: String?
        if parts.count == 2 {
            let nameText = String(parts[1])
            guard !nameText.isEmpty else {
                throw fail("nothing follows #: write the name the server's certificate holds, or leave out # for a certificate that holds the address")
            }
            guard IPAddress(nameText) == nil else {
                throw fail("'\(nameText)' after # is an address, not a name: leave out # for a certificate that holds the address")
            }
            do {
                name = try HostName(nameText).value
            } catch {
                throw UpstreamServerError(text: text, reason: "'\(nameText)' after # is not a host name: \(error.reason)", cause: error)
            }
        }
        do {
            kind = isTLS ? .tls(try DoTEndpoint(parsing: String(parts[0])), name: name) : .https(try ServiceEndpoint(parsing: String(parts[0])), name: name)
        } catch {
            throw endpointError(error)
        }
    }

    /// The canonical form: `IP:PORT` for plain DNS, `tls://IP[:PORT][#NAME]`, `https://IP[:PORT][/PATH][#NAME]`.
    var description: String {
        switch kind {
        case .plain(let address): address.description
        case .tls(let endpoint, let name): endpoint.description + (name.map { "#\($0)" } ?? "")
        case .https(let endpoint, let name): endpoint.description + (name.map { "#\($0)" } ?? "")
        }
    }
}

/// An upstream that cannot be used, and why; a ``SettingError`` names where it came from.
struct UpstreamServerError: Error, Sendable, CustomStringConvertible {
    /// The upstream as it was given.
    let text: String
    /// What is wrong with it, in a sentence fragment.
    let reason: String
    /// The parser's own error, when there is one.
    var cause: (any Error)?

    var description: String { "invalid upstream '\(text)': \(reason)" }
}
