import Dispatch
import Foundation
import FuzzDriver
@_spi(Fuzzing) import HTTPDNSServerTransport

/// The same client bytes into the service's HTTP/2 connection and into swift-nio-http2's `NIOHTTP2Handler` (server
/// mode, no multiplexer, with the application in `Reference`): which requests each takes, which streams it answers
/// or resets and with what code, and whether it ends the connection and with what code must agree, apart from the
/// deliberate differences `Comparison` names. A difference is a finding; so is a crash, a hang, or anything the
/// service's connection still counts once it has closed.
///
/// Each input is one read, and no time passes: read boundaries and timeouts are FuzzHTTP2's to explore. Inputs are
/// at most 16 KiB (scripts/fuzz.sh), within every flow-control window.
/// A directory, to survey differences rather than stop at the first: each input that shows one is written there, with
/// the difference in a file of its own beside it (NAME.txt).
let survey = ProcessInfo.processInfo.environment["HTTPDNS_FUZZ_SURVEY"]

runFuzzer { start, count in
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    let bytes = Comparison.comparable(input)
    let done = DispatchSemaphore(value: 0)
    // Detached: top-level code is the main actor's, and the main thread waits below.
    Task.detached {
        let ours = await TransportFuzzing.http2Exchange(bytes)
        if let broken = ours.broken { fatalError(broken) }
        let reference = Reference.exchange(bytes)
        if let difference = await Comparison.difference(bytes, ours: ours, reference: reference) {
            guard let survey else { fatalError(difference) }
            let name = "\(survey)/\(UInt32.random(in: 0...UInt32.max))"
            _ = FileManager.default.createFile(atPath: name, contents: Data(input))
            _ = FileManager.default.createFile(atPath: name + ".txt", contents: Data(difference.utf8))
        }
        done.signal()
    }
    done.wait()
    return 0
}
