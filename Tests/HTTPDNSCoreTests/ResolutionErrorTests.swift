import HTTPDNSCore
import Testing

@Suite struct ResolutionErrorTests {
    @Test func codesAreStableWordsAndOnlyTwoAreNegativeAnswers() {
        let codes: [(ResolutionError.Code, String, Bool)] = [
            (.nameNotFound, "nameNotFound", true),
            (.noAddress, "noAddress", true),
            (.timeout, "timeout", false),
            (.refused, "refused", false),
            (.serverFailure, "serverFailure", false),
            (.serverUnreachable, "serverUnreachable", false),
            (.malformedAnswer, "malformedAnswer", false),
            (.badName, "badName", false),
            (.tooManyPendingQueries, "tooManyPendingQueries", false),
            (.shutdown, "shutdown", false),
            (.internalError, "internalError", false),
        ]
        for (code, word, negative) in codes {
            #expect(code.description == word)
            #expect(code.isNegativeAnswer == negative, "\(word)")
        }
        #expect(Set(codes.map(\.0)).count == codes.count)
    }

    @Test func errorsCarryCodeMessageAndTTL() {
        let error = ResolutionError(.nameNotFound, "gone", ttlSeconds: 30)
        #expect(error.code == .nameNotFound)
        #expect(error.description == "gone")
        #expect(error.ttlSeconds == 30)
        #expect(ResolutionError(.timeout, "slow").ttlSeconds == nil)
    }

    @Test func negativeSourceAnswerCoversTheFamiliesAsked() {
        let both = SourceAnswer.negative(.noData, families: .all, ttlSeconds: 9)
        #expect(both.ipv4 == .negative(.noData, ttlSeconds: 9))
        #expect(both.ipv6 == .negative(.noData, ttlSeconds: 9))
        let six = SourceAnswer.negative(.nameNotFound, families: .ipv6)
        #expect(six.ipv4 == nil)
        #expect(six.ipv6 == .negative(.nameNotFound, ttlSeconds: nil))
    }
}
