import Foundation
import HTTPDNSCore
import HTTPDNSWire
import Testing

/// The warm-start file: written whole, read strictly.
@Suite struct WarmStartFileTests {
    func path() -> String { FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-warm-\(UUID().uuidString).json").path }

    @Test func roundTrips() throws {
        let file = path()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let entries = [
            CachedEntry(host: try HostName("a.example"), ipv4: .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 60), ipv6: .negative(.noData, ttlSeconds: 30)),
            CachedEntry(host: try HostName("gone.example"), ipv4: .negative(.nameNotFound, ttlSeconds: nil), ipv6: nil),
            CachedEntry(host: try HostName("v6.example"), ipv4: nil, ipv6: .addresses([IPv6Address("2001:db8::1")!], ttlSeconds: 5)),
        ]
        try WarmStartFile.save(entries, to: file)
        #expect(try WarmStartFile.load(from: file) == entries)
    }

    @Test(arguments: [
        (#"[1]"#, "not a warm-start file"),
        (#"{"version":2,"entries":[]}"#, "not a warm-start file"),
        (#"{"version":1,"entries":[{"host":"bad_name"}]}"#, "no valid host"),
        (#"{"version":1,"entries":[{"host":"a.example","ipv4":{"addresses":["2001:db8::1"],"ttl":5}}]}"#, "not an address"),
        (#"{"version":1,"entries":[{"host":"a.example","ipv4":{"addresses":["192.0.2.1"],"ttl":-5}}]}"#, "whole seconds"),
        (#"{"version":1,"entries":[{"host":"a.example","ipv4":{"negative":"maybe","ttl":5}}]}"#, "neither addresses"),
        ("not json", "is not JSON"),
    ])
    func refusesWhatIsNotAWarmStartFile(text: String, reason: String) throws {
        let file = path()
        defer { try? FileManager.default.removeItem(atPath: file) }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let error = #expect(throws: WarmStartError.self) { try WarmStartFile.load(from: file) }
        #expect(error?.reason.contains(reason) == true, "\(error?.description ?? "no error")")
    }

    @Test func aFileThatCannotBeWrittenOrReadSaysSo() {
        let missingDirectory = "/nonexistent-\(UUID().uuidString)/warm.json"
        let write = #expect(throws: WarmStartError.self) { try WarmStartFile.save([], to: missingDirectory) }
        #expect(write?.reason.contains("cannot be written") == true)
        let read = #expect(throws: WarmStartError.self) { try WarmStartFile.load(from: missingDirectory) }
        #expect(read?.reason.contains("cannot be read") == true)
    }
}
