import Testing
@testable import APNs

/// The pool keeps its times as `MonotonicInstant` instead of `ContinuousClock.Instant` (whose
/// layout the standard library hides): the two must read the same clock and do the same sums.
@Suite("MonotonicInstant")
struct MonotonicInstantTests {
    @Test("it reads the clock ContinuousClock reads: two readings of one bracket two of the other")
    func sameClock() {
        for _ in 0..<50 {
            let outerStart = MonotonicInstant.now
            let innerStart = ContinuousClock.now
            var spin = 0
            for i in 0..<1000 { spin &+= i }
            let innerEnd = ContinuousClock.now
            let outerEnd = MonotonicInstant.now
            #expect(spin > 0)
            #expect(outerEnd - outerStart >= innerEnd - innerStart)
            #expect(outerStart <= outerEnd)
        }
    }

    @Test("sums, differences and order agree with ContinuousClock.Instant's on varied offsets")
    func sameArithmetic() {
        var random = SplitMix64(state: 14)
        let base = MonotonicInstant.now, reference = ContinuousClock.now
        func offset() -> Duration {
            .nanoseconds(Int64.random(in: -10_000_000_000...10_000_000_000, using: &random))
        }
        for _ in 0..<2000 {
            let a = offset(), b = offset(), d = offset()
            let (x, y) = (base + a, base + b), (p, q) = (reference + a, reference + b)
            #expect((x < y) == (p < q))
            #expect((x == y) == (p == q))
            #expect((x <= y) == (p <= q))
            #expect(x - y == p - q)
            #expect((x + d) - y == (p + d) - q)
            #expect((x - d) - y == (p - d) - q)
            #expect(((x + d) < y) == ((p + d) < q))
        }
    }
}
