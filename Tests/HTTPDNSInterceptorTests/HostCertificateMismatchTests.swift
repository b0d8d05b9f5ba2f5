import Testing

@testable import HTTPDNSInterceptor

/// Which DNS names of a certificate cover the host the interceptor asked for (the check after NIOSSL's, which would
/// also take a certificate for the address connected to).
struct HostCertificateMismatchTests {
    @Test(arguments: [
        ("a.example", "a.example", true),
        ("A.Example.", "a.example", true),
        ("a.example", "A.EXAMPLE.", true),
        ("b.example", "a.example", false),
        ("*.example.com", "api.example.com", true),
        ("*.example.com", "example.com", false),
        ("*.example.com", "a.b.example.com", false),
        ("*.example.com", ".example.com", false),
        ("*.com", "example.com", false),
        ("a*.example.com", "ab.example.com", false),
        ("*", "example", false),
        ("127.0.0.1", "a.example", false),
        ("*.example.com", "xn--bcher-kva.example.com", false),
        ("\u{212A}.example", "k.example", false),
        ("a.example", "a\u{0301}.example", false),
        ("*.example.com", "*.example.com", false),
    ])
    func aDNSNameCoversTheHostExactlyOrByOneWildcardLabel(_ pattern: String, _ host: String, _ expected: Bool) {
        #expect(HostCertificateMismatch.matches(pattern, host) == expected)
    }

    @Test func theMismatchSaysWhatTheCertificateHolds() {
        #expect("\(HostCertificateMismatch(host: "a.test", names: []))" == "it does not hold a.test as a DNS name (only addresses)")
        #expect("\(HostCertificateMismatch(host: "a.test", names: ["b.test"]))" == "it does not hold a.test as a DNS name (only b.test)")
    }
}
