import HTTPDNSCore
import HTTPDNSTesting
import Testing

@Suite struct MonotonicClockTests {
    @Test func instantArithmetic() {
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        #expect(start.adding(seconds: 3).nanoseconds == 8_000_000_000)
        #expect(start.secondsUntil(start.adding(seconds: 3)) == 3)
        #expect(start.secondsUntil(start) == 0)
        #expect(start.adding(seconds: 3).secondsUntil(start) == 0)
        // Partial seconds round up: anything left counts as a whole second.
        #expect(start.secondsUntil(MonotonicInstant(nanoseconds: 5_000_000_001)) == 1)
        #expect(start.secondsUntil(MonotonicInstant(nanoseconds: 7_500_000_000)) == 3)
        #expect(MonotonicInstant(nanoseconds: 1) < MonotonicInstant(nanoseconds: 2))
    }

    @Test func manualClockMovesOnlyWhenAdvanced() {
        let clock = ManualMonotonicClock(nanoseconds: 42)
        #expect(clock.now().nanoseconds == 42)
        #expect(clock.now().nanoseconds == 42)
        clock.advance(seconds: 1.5)
        #expect(clock.now().nanoseconds == 1_500_000_042)
        clock.advance(seconds: 0)
        #expect(clock.now().nanoseconds == 1_500_000_042)
    }

    @Test func systemClockDoesNotGoBackwards() {
        let clock = SystemMonotonicClock()
        var previous = clock.now()
        for _ in 0..<1_000 {
            let next = clock.now()
            #expect(next >= previous)
            previous = next
        }
    }
}
