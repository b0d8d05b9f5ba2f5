import HTTPDNSURLSession
import Testing

/// `HTTPDNSURLProtocolError` follows docs/API-CONVENTIONS.md: a struct code callers branch on, a message for people,
/// and the error underneath as a `cause` that equality ignores. (Installing over another client, which throws it, is
/// `URLSessionAdapterTests`' part.)
@Suite struct URLSessionErrorCodeTests {
    @Test func theCauseIsNotComparedAndEveryCodeHasItsOwnWord() {
        let withCause = HTTPDNSURLProtocolError(.alreadyInstalled, "installed", cause: CancellationError())
        let without = HTTPDNSURLProtocolError(.alreadyInstalled, "installed")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
        #expect(without.description == "installed")
        #expect(HTTPDNSURLProtocolError.Code.all.map(\.description) == ["already_installed"])
    }
}
