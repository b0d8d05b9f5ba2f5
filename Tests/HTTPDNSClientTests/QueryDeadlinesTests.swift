import NIOCore
import Testing

@testable import HTTPDNSClient

/// The heap of a DoT connection's query deadlines: earliest first, whatever order they come in, and pruned to the
/// queries still in flight.
@Suite("Query deadlines")
struct QueryDeadlinesTests {
    /// Entries inserted in a shuffled order come out earliest first.
    @Test func entriesComeOutEarliestFirst() {
        var generator = SystemRandomNumberGenerator()
        let base = NIODeadline.now()
        let offsets = (0..<500).map { _ in Int64.random(in: 0...10_000, using: &generator) }
        var deadlines = QueryDeadlines()
        for (index, offset) in offsets.enumerated() {
            deadlines.insert(.init(deadline: base + .milliseconds(offset), id: UInt16(index), serial: UInt64(index)))
        }
        #expect(deadlines.count == offsets.count)
        var taken: [Int64] = []
        while let earliest = deadlines.earliest {
            taken.append((earliest.deadline - base).nanoseconds / 1_000_000)
            deadlines.removeEarliest()
        }
        #expect(taken == offsets.sorted())
    }

    /// Pruning keeps exactly the live entries, still earliest first, and more can be inserted after it.
    @Test func pruningKeepsTheLiveEntriesInOrder() {
        let base = NIODeadline.now()
        var deadlines = QueryDeadlines()
        for serial in (0..<200).reversed() {
            deadlines.insert(.init(deadline: base + .milliseconds(Int64(serial)), id: UInt16(serial % 50), serial: UInt64(serial)))
        }
        deadlines.keep { $0.serial % 3 == 0 }
        deadlines.insert(.init(deadline: base + .milliseconds(1), id: 1, serial: 1_000))
        #expect(deadlines.count == 68)
        var serials: [UInt64] = []
        while let earliest = deadlines.earliest {
            serials.append(earliest.serial)
            deadlines.removeEarliest()
        }
        #expect(serials == [0, 1_000] + Array(stride(from: 3, to: 200, by: 3)).map(UInt64.init))
        deadlines.removeEarliest()
        #expect(deadlines.earliest == nil)
    }
}
