import FoundationEssentials

/// The request that follows a redirect (RFC 9110 §15.4), before it is canonicalised and resolved again.
public struct Redirect: Sendable, Hashable {
    /// The statuses followed. 300 and 304 are not: they are answers, not directions.
    public static let statuses: Set<Int> = [301, 302, 303, 307, 308]

    public var method: String
    /// The Location resolved against the URL it came from (RFC 3986 §5.2).
    public var url: String
    /// The caller's fields for the next request.
    public var headers: [CanonicalRequest.Header]
    /// Whether the request body (if any) is sent again: yes unless the redirect made the request a GET (or a HEAD
    /// after a 303), which has none.
    public var keepsBody: Bool

    /// The fields that describe a body, dropped with it.
    static let bodyFields: Set<String> = ["content-type", "content-length", "content-encoding", "content-language", "content-location", "transfer-encoding"]
    /// The fields that carry credentials, dropped on a hop to another origin.
    static let credentialFields: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The next request after `status` with `location`, for a request of `method` to `from` with `headers`.
    /// - Returns: nil when `status` is not followed or there is no Location: the response is the answer.
    /// - Throws: ``InterceptorError`` `invalidRedirect` for a Location that cannot be sent, and `insecureRedirect` for one
    ///   from https to http unless `allowingInsecure`.
    public static func follow(
        status: Int,
        location: String?,
        method: String,
        from: CanonicalRequest,
        headers: [CanonicalRequest.Header],
        allowingInsecure: Bool = false
    ) throws(InterceptorError) -> Redirect? {
        guard statuses.contains(status), let location, !location.isEmpty else { return nil }
        guard let base = URL(string: from.url), let target = URL(string: location, relativeTo: base)?.absoluteURL else {
            throw InterceptorError(.invalidRedirect, "\(from.url) answered \(status) with a Location that is not a URL: '\(location)'")
        }
        let url = target.absoluteString
        // The next hop as the pipeline will send it: its origin is compared in canonical form (an IPv6 literal in
        // brackets and RFC 5952 form, the host lowercased), and a Location the pipeline cannot send is refused here.
        let next: CanonicalRequest
        do {
            guard let canonical = try CanonicalRequest.normalize(method: method, url: url) else {
                throw InterceptorError(.invalidRedirect, "\(from.url) answered \(status) with a Location that is not http or https: '\(location)'")
            }
            next = canonical
        } catch let error as CanonicalRequestError {
            throw InterceptorError(.invalidRedirect, "\(from.url) answered \(status) with a Location that cannot be sent: \(error.reason)", cause: error)
        } catch let error as InterceptorError {
            throw error
        } catch {
            throw InterceptorError(.invalidRedirect, "\(error)", cause: error)
        }
        if from.scheme == "https", next.scheme == "http", !allowingInsecure {
            throw InterceptorError(.insecureRedirect, "\(from.url) redirects to \(url), from https to http; refused")
        }
        // 303: GET (HEAD stays HEAD). 301 and 302: a POST becomes a GET, as every user agent does (§15.4.2,
        // §15.4.3); any other method is kept, and so is its body.
        var redirect = Redirect(method: method, url: url, headers: headers, keepsBody: true)
        if status == 303 || ((status == 301 || status == 302) && method == "POST") {
            if method != "HEAD" { redirect.method = "GET" }
            redirect.keepsBody = false
            redirect.headers.removeAll { bodyFields.contains($0.name.lowercased()) }
        }
        let sameOrigin = next.scheme == from.scheme && next.host == from.host
            && (next.port ?? defaultPort(next.scheme)) == (from.port ?? defaultPort(from.scheme))
        if !sameOrigin {
            redirect.headers.removeAll { credentialFields.contains($0.name.lowercased()) }
        }
        return redirect
    }

    private static func defaultPort(_ scheme: String?) -> Int? {
        switch scheme {
        case "https": 443
        case "http": 80
        default: nil
        }
    }
}
