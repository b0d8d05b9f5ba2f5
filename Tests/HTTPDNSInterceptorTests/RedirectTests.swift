import HTTPDNSInterceptor
import Testing

/// Every rule of ``Redirect/follow(status:location:method:from:headers:allowingInsecure:)``: which statuses are
/// followed, how a Location is resolved, what happens to the method and the body, which fields cross to another
/// origin, and which Locations are refused.
@Suite struct RedirectTests {
    typealias Header = CanonicalRequest.Header

    static let followed = [301, 302, 303, 307, 308]

    static func request(_ url: String, method: String = "GET") throws -> CanonicalRequest {
        try #require(try CanonicalRequest.normalize(method: method, url: url))
    }

    static func follow(
        _ status: Int,
        _ location: String?,
        method: String = "GET",
        from url: String = "https://a.example/dir/page?x=1",
        headers: [Header] = [],
        allowingInsecure: Bool = false
    ) throws -> Redirect? {
        try Redirect.follow(
            status: status,
            location: location,
            method: method,
            from: request(url, method: method),
            headers: headers,
            allowingInsecure: allowingInsecure
        )
    }

    // MARK: Statuses

    @Test(arguments: followed)
    func aRedirectStatusIsFollowed(_ status: Int) throws {
        let next = try #require(try Self.follow(status, "/next"))
        #expect(next.url == "https://a.example/next")
    }

    @Test(arguments: [200, 201, 300, 304, 305, 306, 404])
    func anyOtherStatusIsTheAnswer(_ status: Int) throws {
        #expect(try Self.follow(status, "/next") == nil)
    }

    @Test(arguments: [200, 300, 304])
    func theLocationOfAStatusNotFollowedIsNotLookedAt(_ status: Int) throws {
        #expect(try Self.follow(status, "http://[::1") == nil, "not a URL, yet no error")
        #expect(try Self.follow(status, "http://b.example/") == nil, "https to http, yet no error")
    }

    @Test(arguments: [String?.none, ""], followed)
    func withoutALocationTheResponseIsTheAnswer(_ location: String?, _ status: Int) throws {
        #expect(try Self.follow(status, location) == nil)
    }

    // MARK: Location

    struct Resolution: Sendable, CustomTestStringConvertible {
        let from: String
        let location: String
        let url: String
        var testDescription: String { "\(location) from \(from)" }
    }

    static let resolutions: [Resolution] = [
        Resolution(from: "https://a.example/dir/page?x=1", location: "/abs", url: "https://a.example/abs"),
        Resolution(from: "https://a.example/dir/page?x=1", location: "rel", url: "https://a.example/dir/rel"),
        Resolution(from: "https://a.example/dir/page?x=1", location: "../up", url: "https://a.example/up"),
        Resolution(from: "https://a.example/dir/page?x=1", location: "?q=2", url: "https://a.example/dir/page?q=2"),
        Resolution(from: "https://a.example/dir/page?x=1", location: "//other.test/x", url: "https://other.test/x"),
        Resolution(from: "http://a.example/dir/page", location: "//other.test/x", url: "http://other.test/x"),
        Resolution(from: "http://a.example:8080/p/q", location: "/r", url: "http://a.example:8080/r"),
        Resolution(from: "https://a.example/dir/page", location: "https://b.example:8443/y?z", url: "https://b.example:8443/y?z"),
    ]

    @Test(arguments: resolutions)
    func theLocationIsResolvedAgainstTheCanonicalURL(_ test: Resolution) throws {
        let next = try #require(try Self.follow(302, test.location, from: test.from))
        #expect(next.url == test.url)
    }

    @Test(arguments: ["http://[::1", "ht tp://x", "http://[::1]x/", "http://a.example:8o/"])
    func aLocationThatIsNotAURLIsAnInvalidRedirect(_ location: String) {
        let error = #expect(throws: InterceptorError.self) { try Self.follow(302, location) }
        #expect(error?.code == .invalidRedirect)
        #expect(error?.message.contains(location) == true, "\(String(describing: error))")
    }

    // MARK: Method and body

    struct MethodCase: Sendable, CustomTestStringConvertible {
        let status: Int
        let method: String
        let next: String
        /// Nil where the rule is not asserted here (see `aMethodKeptBy301Or302KeepsItsBody`).
        let keepsBody: Bool?
        var testDescription: String { "\(status) \(method) → \(next)" }
    }

    static let methods: [MethodCase] = [
        MethodCase(status: 303, method: "GET", next: "GET", keepsBody: false),
        MethodCase(status: 303, method: "POST", next: "GET", keepsBody: false),
        MethodCase(status: 303, method: "PUT", next: "GET", keepsBody: false),
        MethodCase(status: 303, method: "DELETE", next: "GET", keepsBody: false),
        MethodCase(status: 303, method: "PATCH", next: "GET", keepsBody: false),
        MethodCase(status: 303, method: "HEAD", next: "HEAD", keepsBody: false),
        MethodCase(status: 301, method: "POST", next: "GET", keepsBody: false),
        MethodCase(status: 302, method: "POST", next: "GET", keepsBody: false),
        MethodCase(status: 301, method: "GET", next: "GET", keepsBody: nil),
        MethodCase(status: 302, method: "GET", next: "GET", keepsBody: nil),
        MethodCase(status: 301, method: "PUT", next: "PUT", keepsBody: nil),
        MethodCase(status: 302, method: "PUT", next: "PUT", keepsBody: nil),
        MethodCase(status: 301, method: "DELETE", next: "DELETE", keepsBody: nil),
        MethodCase(status: 302, method: "DELETE", next: "DELETE", keepsBody: nil),
        MethodCase(status: 302, method: "HEAD", next: "HEAD", keepsBody: nil),
        MethodCase(status: 307, method: "POST", next: "POST", keepsBody: true),
        MethodCase(status: 308, method: "POST", next: "POST", keepsBody: true),
        MethodCase(status: 307, method: "PUT", next: "PUT", keepsBody: true),
        MethodCase(status: 308, method: "DELETE", next: "DELETE", keepsBody: true),
        MethodCase(status: 307, method: "GET", next: "GET", keepsBody: true),
        MethodCase(status: 308, method: "HEAD", next: "HEAD", keepsBody: true),
    ]

    @Test(arguments: methods)
    func theMethodFollowsTheStatus(_ test: MethodCase) throws {
        let next = try #require(try Self.follow(test.status, "/next", method: test.method))
        #expect(next.method == test.next)
        if let keepsBody = test.keepsBody {
            #expect(next.keepsBody == keepsBody)
        }
    }

    /// RFC 9110 §15.4.2–3 allow only POST to become GET; AsyncHTTPClient and the Fetch standard send the body again
    /// with any other method. Here the method is kept but its body is dropped: a PUT arrives empty.
    @Test(arguments: [301, 302], ["PUT", "DELETE", "PATCH"])
    func aMethodKeptBy301Or302KeepsItsBody(_ status: Int, _ method: String) throws {
        let body = [Header("Content-Type", "application/json"), Header("Content-Length", "2")]
        let next = try #require(try Self.follow(status, "/next", method: method, headers: body))
        #expect(next.method == method)
        #expect(next.keepsBody)
        #expect(next.headers == body)
    }

    static let bodyFields = [
        Header("Content-Type", "application/json"), Header("content-length", "12"), Header("Content-Encoding", "gzip"),
        Header("CONTENT-LANGUAGE", "en"), Header("Content-Location", "/doc"), Header("Transfer-Encoding", "chunked"),
    ]
    static let otherFields = [Header("Accept", "*/*"), Header("X-Trace", "1"), Header("Authorization", "Bearer t")]

    @Test(arguments: [(303, "POST"), (303, "PUT"), (301, "POST"), (302, "POST")])
    func aBodyDroppedTakesTheFieldsDescribingItAlong(_ status: Int, _ method: String) throws {
        let given = [Self.otherFields[0]] + Self.bodyFields + Self.otherFields.dropFirst()
        let next = try #require(try Self.follow(status, "/next", method: method, headers: given))
        #expect(next.method == "GET")
        #expect(!next.keepsBody)
        #expect(next.headers == Self.otherFields, "the other fields stay, in their order")
    }

    @Test(arguments: [307, 308])
    func aBodyKeptKeepsEveryField(_ status: Int) throws {
        let given = Self.bodyFields + Self.otherFields
        let next = try #require(try Self.follow(status, "/next", method: "POST", headers: given))
        #expect(next.keepsBody)
        #expect(next.headers == given)
    }

    // MARK: Origins and credentials

    static let credentials = [Header("Authorization", "Basic dTpw"), Header("proxy-authorization", "Basic cDpx"), Header("COOKIE", "s=1")]
    static let harmless = [Header("Accept", "*/*"), Header("X-Trace", "1")]

    struct Hop: Sendable, CustomTestStringConvertible {
        let from: String
        let location: String
        let label: String
        var testDescription: String { label }
    }

    static let crossOrigin: [Hop] = [
        Hop(from: "https://a.example/p", location: "https://b.example/p", label: "another host"),
        Hop(from: "https://a.example/p", location: "//b.example/p", label: "another host, scheme-relative"),
        Hop(from: "https://a.example/p", location: "https://sub.a.example/p", label: "a subdomain"),
        Hop(from: "https://a.example/p", location: "https://a.example:8443/p", label: "another port"),
        Hop(from: "https://a.example:8443/p", location: "https://a.example/p", label: "another port, the default"),
        Hop(from: "http://a.example:8080/p", location: "http://a.example:8081/p", label: "another explicit port"),
        Hop(from: "http://a.example/p", location: "https://a.example/p", label: "http to https"),
        Hop(from: "http://a.example:8080/p", location: "https://a.example:8080/p", label: "http to https, same port"),
    ]

    static let sameOrigin: [Hop] = [
        Hop(from: "https://a.example/p", location: "/q", label: "a path"),
        Hop(from: "https://a.example/p", location: "?q", label: "a query"),
        Hop(from: "https://a.example/p", location: "//a.example/q", label: "scheme-relative"),
        Hop(from: "https://a.example/p", location: "https://A.EXAMPLE/q", label: "the host in capitals"),
        Hop(from: "https://a.example/p", location: "HTTPS://a.example/q", label: "the scheme in capitals"),
        Hop(from: "https://a.example/p", location: "https://a.example:443/q", label: "the default port written"),
        Hop(from: "http://a.example:80/p", location: "http://a.example/q", label: "the default port written in the request"),
        Hop(from: "http://a.example:8080/p", location: "/q", label: "an explicit port, relative"),
        Hop(from: "http://192.0.2.1:8080/p", location: "http://192.0.2.1:8080/q", label: "an IPv4 literal"),
    ]

    @Test(arguments: crossOrigin, followed)
    func aHopToAnotherOriginDropsTheCredentials(_ hop: Hop, _ status: Int) throws {
        let next = try #require(try Self.follow(status, hop.location, from: hop.from, headers: Self.credentials + Self.harmless))
        #expect(next.headers == Self.harmless)
    }

    @Test(arguments: sameOrigin, followed)
    func aHopWithinTheOriginKeepsTheCredentials(_ hop: Hop, _ status: Int) throws {
        let given = Self.harmless + Self.credentials
        let next = try #require(try Self.follow(status, hop.location, from: hop.from, headers: given))
        #expect(next.headers == given)
    }

    /// Foundation's `URL.host` has no brackets and the canonical host has them, so an IPv6 origin never equals itself.
    @Test(arguments: ["/q", "https://[::1]:8443/q"])
    func aHopWithinAnIPv6OriginKeepsTheCredentials(_ location: String) throws {
        let given = Self.harmless + Self.credentials
        let next = try #require(try Self.follow(302, location, from: "https://[::1]:8443/p", headers: given))
        #expect(next.url == "https://[::1]:8443/q")
        #expect(next.headers == given)
    }

    // MARK: https to http

    @Test(arguments: ["http://a.example/p", "HTTP://a.example/p", "http://b.example:8080/p"], followed)
    func aHopFromHTTPSToHTTPIsRefused(_ location: String, _ status: Int) {
        let error = #expect(throws: InterceptorError.self) { try Self.follow(status, location, from: "https://a.example/p") }
        #expect(error?.code == .insecureRedirect)
        #expect(error?.message.contains("https://a.example/p") == true, "\(String(describing: error))")
    }

    @Test(arguments: followed)
    func aHopFromHTTPSToHTTPIsFollowedWhenAllowedWithoutTheCredentials(_ status: Int) throws {
        let next = try #require(
            try Self.follow(
                status,
                "http://a.example/p",
                from: "https://a.example/p",
                headers: Self.credentials + Self.harmless,
                allowingInsecure: true
            )
        )
        #expect(next.url == "http://a.example/p")
        #expect(next.headers == Self.harmless, "another scheme is another origin")
    }

    @Test func hopsBetweenHTTPOriginsAndUpToHTTPSAreNotInsecure() throws {
        #expect(try Self.follow(302, "http://b.example/", from: "http://a.example/")?.url == "http://b.example/")
        #expect(try Self.follow(302, "https://a.example/", from: "http://a.example/")?.url == "https://a.example/")
    }
}
