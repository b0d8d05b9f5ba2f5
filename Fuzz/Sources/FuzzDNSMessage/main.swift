import FuzzDriver
import HTTPDNSWire

/// DNS messages as the service reads them: a DoH query (the strict reader) and an upstream's answer (every
/// section), each record's data then written in presentation form as JSON DNS does. A parse error is expected;
/// a crash, a hang or a leak is a finding.
runFuzzer { start, count in
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    _ = try? DNSMessage(parsingQuery: bytes)
    if let message = try? DNSMessage(parsing: bytes) {
        for record in message.answers + message.authorities + message.additionals {
            _ = RecordPresentation.text(record)
        }
    }
    return 0
}
