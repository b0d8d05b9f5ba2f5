import HTTPDNSCore
import Testing

@testable import HTTPDNSClient

/// Which address is asked first: healthy and fast ones, then probes after a cool-down that doubles.
@Suite struct ServiceAddressHealthTests {
    let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    func at(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: start.nanoseconds + UInt64(seconds * 1e9)) }

    @Test func aFailedAddressWaitsOutItsCoolDownWhichDoubles() {
        var health = ServiceAddressHealth(count: 2, coolDown: .seconds(1), maxCoolDown: .seconds(3))
        #expect(health.order(now: start) == [0, 1])
        health.failed(0, now: start)
        #expect(health.order(now: at(0.5)) == [1, 0], "cooling: asked last")
        #expect(health.order(now: at(1)) == [1, 0], "due again, as a probe after the healthy one")
        health.failed(0, now: at(1))
        #expect(health.entries[0].coolingUntil == at(3), "2 s the second time")
        health.failed(0, now: at(3))
        #expect(health.entries[0].coolingUntil == at(6), "capped at 3 s")
        health.succeeded(0, latencyNanoseconds: 1_000)
        #expect(health.entries[0].failuresInARow == 0 && health.entries[0].coolingUntil == nil)
    }

    @Test func theFasterHealthyAddressGoesFirst() {
        var health = ServiceAddressHealth(count: 3, coolDown: .seconds(1), maxCoolDown: .seconds(60))
        health.succeeded(0, latencyNanoseconds: 9_000_000)
        health.succeeded(1, latencyNanoseconds: 1_000_000)
        health.succeeded(2, latencyNanoseconds: 5_000_000)
        #expect(health.order(now: start) == [1, 2, 0])
    }

    @Test func whenAllAreCoolingTheSoonestDueIsStillTried() {
        var health = ServiceAddressHealth(count: 2, coolDown: .seconds(1), maxCoolDown: .seconds(60))
        health.failed(0, now: start)
        health.failed(0, now: at(1))
        health.failed(1, now: at(1))
        #expect(health.order(now: at(1.5)) == [1, 0])
    }

    @Test func aNetworkChangeForgetsFailuresAndLatencies() {
        var health = ServiceAddressHealth(count: 2, coolDown: .seconds(1), maxCoolDown: .seconds(60))
        health.failed(0, now: start)
        health.succeeded(1, latencyNanoseconds: 9_000_000)
        #expect(health.order(now: start) == [1, 0])
        let generation = health.generation
        health.reset()
        #expect(health.generation == generation + 1, "attempts begun before the change are not counted after it")
        #expect(health.order(now: start) == [0, 1], "as configured again")
        #expect(health.entries.allSatisfy { $0.failuresInARow == 0 && $0.coolingUntil == nil && $0.latencyNanoseconds == nil })
    }

    /// `first(now:)`, which a lookup asking one address first uses, is always the first of `order(now:)`: over random
    /// failures, successes and times, with ties in latency and in cool-downs among them.
    @Test func theFirstIsAlwaysTheOrdersFirst() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...5, using: &generator)
            var health = ServiceAddressHealth(count: count, coolDown: .seconds(1), maxCoolDown: .seconds(8))
            for _ in 0..<Int.random(in: 0...12, using: &generator) {
                let index = Int.random(in: 0..<count, using: &generator)
                if Bool.random(using: &generator) {
                    health.failed(index, now: at(Double(Int.random(in: 0...4, using: &generator))))
                } else {
                    health.succeeded(index, latencyNanoseconds: UInt64(Int.random(in: 1...3, using: &generator)) * 1_000_000)
                }
            }
            let now = at(Double(Int.random(in: 0...20, using: &generator)) / 2)
            #expect(health.first(now: now) == health.order(now: now).first, "\(health.entries) at \(now)")
        }
    }
}
