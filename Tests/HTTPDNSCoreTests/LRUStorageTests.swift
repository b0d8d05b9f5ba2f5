import Testing

@testable import HTTPDNSCore

@Suite struct LRUStorageTests {
    /// The value stored for `key`, without touching it.
    private func value(_ storage: LRUStorage<String, Int>, _ key: String) -> Int? {
        storage.slot(of: key).map { storage.value(at: $0) }
    }

    @Test func emptyStorage() {
        var storage = LRUStorage<String, Int>()
        #expect(storage.count == 0)
        #expect(storage.keysByRecency.isEmpty)
        #expect(storage.slot(of: "a") == nil)
        #expect(storage.removeOldest() == nil)
        #expect(storage.remove("a") == nil)
    }

    @Test func setOrdersByRecencyAndRemoveOldestTakesTheLeastRecentlyUsed() {
        var storage = LRUStorage<String, Int>()
        storage.set(1, for: "a")
        storage.set(2, for: "b")
        storage.set(3, for: "c")
        #expect(storage.count == 3)
        #expect(storage.keysByRecency == ["c", "b", "a"])

        let oldest = storage.removeOldest()
        #expect(oldest?.key == "a")
        #expect(oldest?.value == 1)
        #expect(storage.keysByRecency == ["c", "b"])
        #expect(storage.slot(of: "a") == nil)
    }

    @Test func touchMakesAnEntryTheNewest() throws {
        var storage = LRUStorage<String, Int>()
        for (index, key) in ["a", "b", "c"].enumerated() { storage.set(index, for: key) }
        storage.touch(try #require(storage.slot(of: "a")))
        #expect(storage.keysByRecency == ["a", "c", "b"])
        storage.touch(try #require(storage.slot(of: "c")))
        #expect(storage.keysByRecency == ["c", "a", "b"])
        // Touching the newest changes nothing.
        storage.touch(try #require(storage.slot(of: "c")))
        #expect(storage.keysByRecency == ["c", "a", "b"])
        #expect(storage.removeOldest()?.key == "b")
        #expect(storage.removeOldest()?.key == "a")
        #expect(storage.removeOldest()?.key == "c")
        #expect(storage.removeOldest() == nil)
    }

    @Test func setOfAnExistingKeyReplacesTheValueAndTouches() {
        var storage = LRUStorage<String, Int>()
        storage.set(1, for: "a")
        storage.set(2, for: "b")
        storage.set(10, for: "a")
        #expect(storage.count == 2)
        #expect(value(storage, "a") == 10)
        #expect(storage.keysByRecency == ["a", "b"])
    }

    @Test func slotValueAndModifyDoNotTouch() throws {
        var storage = LRUStorage<String, Int>()
        storage.set(1, for: "a")
        storage.set(2, for: "b")
        let slot = try #require(storage.slot(of: "a"))
        #expect(storage.value(at: slot) == 1)
        let returned = storage.modify(at: slot) { value -> String in
            value += 41
            return "done"
        }
        #expect(returned == "done")
        #expect(value(storage, "a") == 42)
        #expect(storage.keysByRecency == ["b", "a"])
    }

    @Test func removeFromTheMiddleAndTheEnds() {
        var storage = LRUStorage<String, Int>()
        for (index, key) in ["a", "b", "c", "d"].enumerated() { storage.set(index, for: key) }
        #expect(storage.remove("b") == 1)
        #expect(storage.keysByRecency == ["d", "c", "a"])
        #expect(storage.remove("d") == 3)
        #expect(storage.keysByRecency == ["c", "a"])
        #expect(storage.remove("a") == 0)
        #expect(storage.keysByRecency == ["c"])
        #expect(storage.remove("a") == nil)
        #expect(storage.count == 1)
        #expect(storage.removeOldest()?.key == "c")
        #expect(storage.count == 0)
    }

    @Test func freedSlotsAreReusedWithoutMixingEntries() {
        var storage = LRUStorage<String, Int>()
        storage.set(1, for: "a")
        storage.set(2, for: "b")
        storage.remove("a")
        storage.set(3, for: "c")
        storage.set(4, for: "d")
        #expect(storage.count == 3)
        #expect(storage.keysByRecency == ["d", "c", "b"])
        #expect(value(storage, "b") == 2)
        #expect(value(storage, "c") == 3)
        #expect(value(storage, "d") == 4)
        #expect(value(storage, "a") == nil)
        #expect(Set([storage.slot(of: "b"), storage.slot(of: "c"), storage.slot(of: "d")]).count == 3)
    }

    @Test func removeAllEmptiesTheStorage() {
        var storage = LRUStorage<String, Int>()
        for (index, key) in ["a", "b", "c"].enumerated() { storage.set(index, for: key) }
        storage.removeAll()
        #expect(storage.count == 0)
        #expect(storage.keysByRecency.isEmpty)
        #expect(storage.removeOldest() == nil)
        storage.set(7, for: "z")
        #expect(storage.keysByRecency == ["z"])
    }

    /// Random operations checked against a plain array model of recency order.
    @Test func matchesAReferenceModel() {
        var storage = LRUStorage<Int, Int>()
        var model: [(key: Int, value: Int)] = []  // newest first
        var generator = SplitMix64(seed: 0x5EED)
        for step in 0..<5_000 {
            let key = Int(generator.next() % 32)
            switch generator.next() % 5 {
            case 0, 1:
                storage.set(step, for: key)
                model.removeAll { $0.key == key }
                model.insert((key, step), at: 0)
            case 2:
                if let slot = storage.slot(of: key) {
                    storage.touch(slot)
                    let index = model.firstIndex { $0.key == key }!
                    model.insert(model.remove(at: index), at: 0)
                } else {
                    #expect(!model.contains { $0.key == key })
                }
            case 3:
                let removed = storage.remove(key)
                let index = model.firstIndex { $0.key == key }
                #expect(removed == index.map { model[$0].value })
                if let index { model.remove(at: index) }
            default:
                let oldest = storage.removeOldest()
                let expected = model.popLast()
                #expect(oldest?.key == expected?.key)
                #expect(oldest?.value == expected?.value)
            }
            #expect(storage.count == model.count)
            if storage.keysByRecency != model.map(\.key) {
                Issue.record("order differs after step \(step): \(storage.keysByRecency) vs \(model.map(\.key))")
                return
            }
        }
    }
}

/// A small deterministic generator, so the model test is reproducible.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
