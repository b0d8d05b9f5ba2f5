import HTTPDNSSettings
import Testing

/// `SettingError` follows docs/API-CONVENTIONS.md: a struct code callers branch on, a message for people (printed
/// as before), and the error underneath as a `cause` that equality ignores.
@Suite struct SettingsErrorCodeTests {
    @Test func theOldInitialiserStillMakesAnInvalidValueWithTheSameText() {
        let error = SettingError("--listen must be HOST:PORT")
        #expect(error.code == .invalidValue)
        #expect(error.cause == nil)
        #expect(error.description == "--listen must be HOST:PORT")
        #expect(error == SettingError(.invalidValue, "--listen must be HOST:PORT"))
        #expect(error != SettingError(.inconsistent, "--listen must be HOST:PORT"))
    }

    @Test func aValueThatIsNotOfItsKindIsAnInvalidValue() {
        let error = #expect(throws: SettingError.self) { try HostAndPort("no port here") }
        #expect(error?.code == .invalidValue, "\(String(describing: error))")
    }

    @Test func aSettingErrorKeepsItsCauseOutOfEquality() {
        let withCause = SettingError(.unreadableFile, "cannot read the configuration file /x.json", cause: CancellationError())
        let without = SettingError(.unreadableFile, "cannot read the configuration file /x.json")
        #expect(withCause.cause is CancellationError)
        #expect(withCause == without && withCause.hashValue == without.hashValue)
    }

    @Test func everyCodeIsListedOnceWithItsOwnWord() {
        let all = SettingError.Code.all
        #expect(all.count == 5)
        #expect(Set(all).count == 5)
        #expect(Set(all.map(\.description)) == ["invalid_value", "inconsistent", "unknown_key", "unreadable_file", "invalid_file"])
    }
}
