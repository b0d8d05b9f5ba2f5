import Foundation
import Glibc
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

    /// What is not a regular file of at most `maxBytes` is refused before it is read: a FIFO would hang the start, and
    /// /dev/zero would fill memory.
    @Test(.timeLimit(.minutes(1))) func onlyARegularFileOfBoundedSizeIsRead() throws {
        let device = #expect(throws: WarmStartError.self) { try WarmStartFile.load(from: "/dev/zero") }
        #expect(device?.reason.contains("cannot be read: it is not a regular file") == true, "\(device?.description ?? "no error")")
        let fifo = path()
        guard mkfifo(fifo, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { try? FileManager.default.removeItem(atPath: fifo) }
        let pipe = #expect(throws: WarmStartError.self) { try WarmStartFile.load(from: fifo) }
        #expect(pipe?.reason.contains("it is not a regular file") == true, "\(pipe?.description ?? "no error")")
        let file = path()
        defer { try? FileManager.default.removeItem(atPath: file) }
        try WarmStartFile.save([], to: file)
        #expect(try WarmStartFile.load(from: file, maxBytes: 100).isEmpty)
        let large = #expect(throws: WarmStartError.self) { try WarmStartFile.load(from: file, maxBytes: 10) }
        #expect(large?.reason.contains("larger than 10 bytes") == true, "\(large?.description ?? "no error")")
    }

    /// A full disk: saving fails with an error that says so, and the file saved before it stays whole, with nothing
    /// half-written beside it (a save writes a new file and renames it over the old one). The disk is a 64 KiB tmpfs
    /// mounted for the test and filled to the last byte, so the test needs to be able to mount (root, as CI runs);
    /// elsewhere it is cancelled, saying why.
    @Test func aFullDiskLeavesTheFileSavedBeforeWhole() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-full-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard mount("httpdns-full", directory, "tmpfs", 0, "size=64k") == 0 else {
            try Test.cancel("a 64 KiB tmpfs could not be mounted to fill (mounting needs root): \(String(cString: strerror(errno)))")
        }
        // Detached, so that a file still open cannot keep it mounted; the directory is removed after it.
        defer {
            let unmounted = umount2(directory, Int32(MNT_DETACH))
            let reason = String(cString: strerror(errno))
            #expect(unmounted == 0, "umount \(directory): \(reason)")
        }

        let file = "\(directory)/warm.json"
        let saved = [CachedEntry(host: try HostName("a.example"), ipv4: .addresses([IPv4Address("192.0.2.1")!], ttlSeconds: 60), ipv6: nil)]
        try WarmStartFile.save(saved, to: file)

        // Fill what is left, to the last byte.
        let filler = open("\(directory)/filler", O_WRONLY | O_CREAT, 0o600)
        try #require(filler >= 0)
        let block = [UInt8](repeating: 0x2e, count: 4096)
        var lastErrno: Int32 = 0
        while true {
            let written = block.withUnsafeBytes { write(filler, $0.baseAddress, $0.count) }
            if written < 0 { lastErrno = errno; break }
        }
        close(filler)
        try #require(lastErrno == ENOSPC, "the filler stopped with errno \(lastErrno), not ENOSPC")

        let bigger = saved + [CachedEntry(host: try HostName("b.example"), ipv4: .addresses([IPv4Address("192.0.2.2")!], ttlSeconds: 60), ipv6: nil)]
        let error = #expect(throws: WarmStartError.self) { try WarmStartFile.save(bigger, to: file) }
        #expect(error?.reason.contains("cannot be written") == true && error?.reason.contains("No space left on device") == true, "\(error?.description ?? "no error")")
        #expect(error?.description.contains(file) == true)
        #expect(try WarmStartFile.load(from: file) == saved)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["filler", "warm.json"])
    }
}
