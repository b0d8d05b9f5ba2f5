import HTTPDNSCore

/// What a relay (`DoTSource.send(_:)`, `DoHSource.send(_:)`) checks of an answer before it hands it on: that it is a
/// response to the query sent (RFC 7766 §7), so that a late answer to another query, or a server that echoes the
/// query, is never taken for the answer and cached under the question asked.
enum RelayAnswer {
    /// Takes `answer` from `server` as the relay's answer to `query`: a response to the query, NOERROR, NXDOMAIN or
    /// anything else but SERVFAIL and REFUSED, which move on to the next address (kept in `refusal`, the answer when
    /// no address does better).
    /// - Throws: why the next address is asked.
    static func accept(_ answer: [UInt8], to query: [UInt8], from server: @autoclosure () -> String, refusal: inout [UInt8]?) throws(ResolutionError) -> [UInt8] {
        if let reason = mismatch(query: query, answer: answer) {
            throw ResolutionError(.malformedAnswer, "\(server()) sent an answer that is not the response to the query: \(reason)")
        }
        let code = answer[3] & 0x0F
        if code == 2 || code == 5 {
            refusal = answer
            throw ResolutionError(code == 2 ? .serverFailure : .refused, "\(server()) answered \(code == 2 ? "SERVFAIL" : "REFUSED")")
        }
        return answer
    }

    /// Why `answer` is not the response to `query`, or nil when it is: the same ID, QR set, the same opcode, and the
    /// same question section (names compared without case).
    static func mismatch(query: [UInt8], answer: [UInt8]) -> String? {
        guard answer.count >= 12 else { return "it is shorter than a DNS header" }
        guard answer[0] == query[0], answer[1] == query[1] else { return "its ID is not the query's" }
        guard answer[2] & 0x80 != 0 else { return "it is not a response (QR is clear)" }
        guard (answer[2] >> 3) & 0x0F == (query[2] >> 3) & 0x0F else { return "its opcode is not the query's" }
        guard answer[4] == query[4], answer[5] == query[5] else { return "its question count is not the query's" }
        guard let end = questionsEnd(query) else { return nil }
        guard answer.count >= end else { return "its question section is cut short" }
        for index in 12..<end where lowercased(answer[index]) != lowercased(query[index]) {
            return "its question is not the query's"
        }
        return nil
    }

    /// Where the question section of `message` ends: its names uncompressed, as a query's are. Nil when it cannot be
    /// walked (a compressed name, a count past the end): the question is then not compared.
    private static func questionsEnd(_ message: [UInt8]) -> Int? {
        let count = Int(message[4]) << 8 | Int(message[5])
        var index = 12
        for _ in 0..<count {
            while true {
                guard index < message.count else { return nil }
                let length = Int(message[index])
                if length == 0 { break }
                guard length < 64 else { return nil }
                index += 1 + length
            }
            index += 1 + 4
            guard index <= message.count else { return nil }
        }
        return index
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }
}
