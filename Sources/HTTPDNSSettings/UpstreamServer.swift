import HTTPDNSClient
import HTTPDNSCore

/// One upstream of `httpdns serve`, as ``SettingKind/upstreams`` reads it: plain DNS, `IP[:PORT]` (port 53 by
/// default), or DNS over TLS, `tls://IP[:PORT][#NAME]` (port 853 by default). `#NAME` is the name the server's
/// certificate must hold, as unbound's `forward-addr` writes it; without it, the certificate must hold the address.
/// Either way the server is given by IP: reaching it needs no DNS.
struct UpstreamServer: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case plain(DNSServerAddress)
        /// The endpoint, and the name its certificate must hold (nil: the address).
        case tls(DoTEndpoint, name: String?)
    }

    let kind: Kind

    /// - Throws: ``UpstreamServerError`` saying what is wrong with `text`.
    init(parsing text: String) throws(UpstreamServerError) {
        func fail(_ reason: String) -> UpstreamServerError { UpstreamServerError(text: text, reason: reason) }
        guard text.hasPrefix("tls://") else {
            if let scheme = text.range(of: "://") {
                throw fail(
                    "'\(text[..<scheme.lowerBound])://' is not an upstream: write IP[:PORT] for plain DNS or tls://IP[:PORT][#NAME] for DNS over TLS"
                )
            }
            if text.contains("#") {
                throw fail("#NAME is for DNS over TLS: write tls://IP[:PORT]#NAME")
            }
            do {
                kind = .plain(try DNSServerAddress(parsing: text))
            } catch {
                let hint =
                    error.code == .invalidAddress ? "; for DNS over TLS, the name the certificate holds goes after #: tls://IP[:PORT]#NAME" : ""
                throw UpstreamServerError(text: text, reason: error.reason + hint, cause: error)
            }
            return
        }
        let parts = text.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let authority = parts[0].dropFirst("tls://".count).prefix { $0 != "/" }
        if !authority.hasPrefix("["), authority.filter({ $0 == ":" }).count > 1 {
            throw fail("an IPv6 address goes in brackets: tls://[\(authority)]")
        }
        let endpoint: DoTEndpoint
        do {
            endpoint = try DoTEndpoint(parsing: String(parts[0]))
        } catch {
            let hint = error.code == .invalidAddress ? "; the name the certificate holds goes after #: tls://IP[:PORT]#NAME" : ""
            let reason = error.reason.replacing("a service is addressed by IP", with: "an upstream is given by IP")
            throw UpstreamServerError(text: text, reason: reason + hint, cause: error)
        }
        guard parts.count == 2 else {
            kind = .tls(endpoint, name: nil)
            return
        }
        let nameText = String(parts[1])
        guard !nameText.isEmpty else {
            throw fail("nothing follows #: write the name the server's certificate holds, or leave out # for a certificate that holds the address")
        }
        guard IPAddress(nameText) == nil else {
            throw fail("'\(nameText)' after # is an address, not a name: leave out # for a certificate that holds the address")
        }
        do {
            kind = .tls(endpoint, name: try HostName(nameText).value)
        } catch {
            throw UpstreamServerError(text: text, reason: "'\(nameText)' after # is not a host name: \(error.reason)", cause: error)
        }
    }

    /// The canonical form: `IP:PORT` for plain DNS, `tls://IP[:PORT][#NAME]` for DNS over TLS.
    var description: String {
        switch kind {
        case .plain(let address): address.description
        case .tls(let endpoint, let name): endpoint.description + (name.map { "#\($0)" } ?? "")
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
