#if OpenAPI
import FoundationEssentials
import HTTPTypes
import Testing

@testable import HTTPDNSOpenAPI

/// The operation's URL: the transport joins the server URL and the operation's path itself when it can, and must
/// give what joining them by `URLComponents` (swift-openapi-async-http-client's way) gives, or leave it to that.
@Suite("The OpenAPI transport's URLs")
struct OperationURLTests {
    static let bases = [
        "https://api.example", "https://api.example/", "https://api.example/v1", "https://api.example:8443/v1/",
        "http://user:pa%20ss@api.example/v1", "HTTPS://API.Example/V1", "https://api.example/a%2Fb",
        "https://api.example/v1?key=1", "https://api.example/v1#top", "https://[::1]:8443/v1", "https://api.example/a b",
        "https://api.example/%zz", "https://api.example/%4", "api.example/v1", "https://api.example/é",
        // No host, or no scheme: `https:/` + `/pets` must not become the host `pets`.
        "/", "https:/", "https:", "https://", "mailto:x", "://api.example/v1", "//api.example/v1", "user@api.example:8443/v1",
        // Ports URLComponents prints as numbers.
        "https://api.example:0443/v1", "https://api.example:/v1", "https://api.example:443x/v1", "https://api.example:123456/v1",
        "https://user:pass@api.example:8443/v1", "https://user@:8443/v1",
        // An `@` within the user information, which URLComponents encodes.
        "https://a@b@api.example/v1", "https://u:p@ss@api.example",
    ]
    static let paths = [
        "", "/", "/pets", "/pets/1", "/pets?limit=10", "/pets?limit=10&q=a/b?c", "/pets?", "/a%20b", "/a:b@c",
        "//evil.example/pets", "pets", "/pets#frag", "/a b", "/%zz", "/%4", "/p%C3%A9t", "/pét", "/pets?q=[1]",
        "/!$&'()*+,;=-._~",
    ]

    /// Every pair: the quick join, where it applies, is the components' join exactly; the URL the transport makes
    /// is that join, or the same error.
    @Test func theQuickJoinIsTheComponentsJoin() {
        var quick = 0
        for base in Self.bases {
            for path in Self.paths {
                let expected = try? InterceptingClientTransport.joinedByComponents(base, path)
                if let joined = InterceptingClientTransport.plainlyJoined(base, path) {
                    quick += 1
                    #expect(joined == expected, "\(base) + \(path)")
                }
                guard let baseURL = URL(string: base) else { continue }
                let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
                #expect((try? InterceptingClientTransport.url(of: request, baseURL: baseURL)) == expected, "\(base) + \(path)")
            }
        }
        // The quick join is the common case, not one never taken.
        #expect(quick >= 60)
    }

    /// What the quick join leaves to the components: a path read as an authority, a base with a query or a
    /// fragment, characters a URL cannot hold as they are.
    @Test func theQuickJoinLeavesWhatItCannotJoinPlainly() {
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example", "//evil.example/pets") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example/v1?key=1", "/pets") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example/v1#top", "/pets") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example", "/a b") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example", "/%4") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example", "/pets#frag") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example", "pets") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https:/", "/pets") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("/", "/pets") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example:0443", "/pets") == nil)
        #expect(InterceptingClientTransport.plainlyJoined("https://api.example/v1", "/pets?limit=10") == "https://api.example/v1/pets?limit=10")
    }
}
#endif
