#if GRPC
@testable import HTTPDNSGRPC
import Testing

/// The certificate's names against the host: the interceptor's rules (RFC 6125).
@Suite("The certificate name rule")
struct CertificateNameRuleTests {
    @Test(arguments: [
        ("grpc.test", "grpc.test", true),
        ("GRPC.Test.", "grpc.test", true),
        ("*.test", "grpc.test", false),
        ("*.example.test", "grpc.example.test", true),
        ("*.example.test", "a.b.example.test", false),
        ("*.example.test", "xn--bcher-kva.example.test", false),
        ("other.test", "grpc.test", false),
        ("127.0.0.61", "grpc.test", false),
        ("grpc_test", "grpc_test", false),
    ])
    func matches(_ pattern: String, _ host: String, _ expected: Bool) {
        #expect(CertificateNameCheck.matches(pattern, host) == expected)
    }

    @Test func noCertificateIsRefused() {
        #expect(CertificateNameCheck.reasonToRefuse(nil, host: "grpc.test") == "the server sent no certificate")
    }
}
#endif
