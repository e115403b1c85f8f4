import Dispatch
import Foundation
import Synchronization
import Testing
@testable import EventLoop

@Suite("EventLoop: timers and the loop clock")
struct TimerTests {
    @Test("timers fire in deadline order and cancelled ones never fire")
    func timersFireInOrder() async throws {
        let loop = try EventLoop(name: "timer-test")
        defer { loop.shutdown() }
        let done = Waiter<[Int]>()
        loop.execute {
            let fired = LoopBound(Box<[Int]>([]), on: loop)
            for ms in [30, 10, 20, 5] {
                loop.schedule(after: .milliseconds(ms)) { fired.value.value.append(ms) }
            }
            let cancelled = loop.schedule(after: .milliseconds(15)) { fired.value.value.append(15) }
            let cancelledLater = loop.schedule(after: .milliseconds(40)) { fired.value.value.append(40) }
            cancelled.cancel()
            loop.schedule(after: .milliseconds(12)) { cancelledLater.cancel() }
            loop.schedule(after: .milliseconds(60)) { done.fulfill(fired.value.value) }
        }
        #expect(await done.value() == [5, 10, 20, 30])
    }

    @Test("the timer heap pops due deadlines in order, ties in scheduling order")
    func timerHeapOrder() {
        var heap = TimerHeap<String>()
        let base = LoopClock.now(), second: Int64 = 1_000_000_000
        heap.insert("c", deadline: base + 3 * second)
        heap.insert("a", deadline: base + second)
        heap.insert("b", deadline: base + 2 * second)
        heap.insert("a2", deadline: base + second)
        heap.insert("d", deadline: base + 9 * second)
        #expect(heap.popDue(now: base) == nil)
        #expect(heap.popDue(now: base + second - 1) == nil)
        #expect(heap.nearestDeadline == base + second)
        var popped: [String] = []
        while let e = heap.popDue(now: base + 3 * second) { popped.append(e) }
        #expect(popped == ["a", "a2", "b", "c"])
        #expect(heap.count == 1)
    }

    @Test("an idle loop sleeps until its timer is due: the timer fires at its deadline, not before, without spinning")
    func idleLoopSleepsUntilTimer() async throws {
        let probe = LoopEventCount()
        let loop = try EventLoop(name: "timer-sleep-test", probe: probe)
        defer { loop.shutdown() }
        let done = Waiter<(wakeUps: Int, early: Int64)>()
        loop.execute {
            let wakeUps = probe.wakeUps.load(ordering: .relaxed)
            // 100.4 ms: the fraction of a millisecond must round the sleep up, not to a spin.
            let delay = Duration.microseconds(100_400)
            let deadline = LoopClock.now() + LoopClock.nanoseconds(delay)
            loop.schedule(after: delay) {
                done.fulfill((probe.wakeUps.load(ordering: .relaxed) - wakeUps, deadline - LoopClock.now()))
            }
        }
        let result = try #require(await done.value(timeout: 5))
        #expect(result.early <= 0, "fired \(result.early) ns before its deadline")
        #expect(result.wakeUps <= 3, "the loop woke \(result.wakeUps) times for one timer")
    }

    @Test("the loop clock converts delays rounding up, never below zero or past its cap")
    func loopClockConversions() {
        #expect(LoopClock.nanoseconds(.zero) == 0)
        #expect(LoopClock.nanoseconds(.milliseconds(-5)) == 0)
        #expect(LoopClock.nanoseconds(.nanoseconds(-1)) == 0)
        #expect(LoopClock.nanoseconds(.nanoseconds(1)) == 1)
        #expect(LoopClock.nanoseconds(.seconds(8)) == 8_000_000_000)
        #expect(LoopClock.nanoseconds(.milliseconds(1500)) == 1_500_000_000)
        // A part of a nanosecond counts as a whole one: a timer fires late, never early.
        #expect(LoopClock.nanoseconds(.seconds(2) + .nanoseconds(1) / 4) == 2_000_000_001)
        #expect(LoopClock.nanoseconds(.seconds(Int64.max)) == LoopClock.maxDelay)
        #expect(LoopClock.now() + LoopClock.maxDelay > LoopClock.now())
        // Timeouts: due now (or overdue) is 0, anything shorter than a millisecond is 1.
        #expect(LoopClock.milliseconds(0) == 0)
        #expect(LoopClock.milliseconds(-3_000_000) == 0)
        #expect(LoopClock.milliseconds(1) == 1)
        #expect(LoopClock.milliseconds(1_000_000) == 1)
        #expect(LoopClock.milliseconds(1_000_001) == 2)
        #expect(LoopClock.milliseconds(LoopClock.maxDelay) == Int32.max)
        // CLOCK_MONOTONIC in nanoseconds: a reading falls between two of the kernel's own.
        let before = monotonicNanoseconds()
        let reading = LoopClock.now()
        let after = monotonicNanoseconds()
        #expect(before <= reading && reading <= after)
        #expect(LoopClock.now() >= reading)
    }

    @Test("removing elements from the timer heap keeps the others in deadline and tie order")
    func timerHeapRemoval() {
        var heap = TimerHeap<Int>()
        let base = LoopClock.now(), second: Int64 = 1_000_000_000
        // Deadlines in a scrambled order, with ties: element i is due at second (i * 7) % 10.
        for i in 0..<200 { heap.insert(i, deadline: base + Int64((i * 7) % 10) * second) }
        heap.removeAll { $0 % 3 == 0 }
        #expect(heap.count == 200 - 67)
        var popped: [Int] = []
        while let e = heap.popDue(now: base + 10 * second) { popped.append(e) }
        let expected = (0..<200).filter { $0 % 3 != 0 }.sorted { a, b in
            (a * 7) % 10 != (b * 7) % 10 ? (a * 7) % 10 < (b * 7) % 10 : a < b
        }
        #expect(popped == expected)
    }

    @Test("timers cancelled long before they are due do not pile up in the loop")
    func cancelledTimersAreDropped() async throws {
        let loop = try EventLoop(name: "timer-cancel-test")
        defer { loop.shutdown() }
        let result = Waiter<(pending: Int, fired: [Int])>()
        loop.execute {
            let fired = LoopBound(Box<[Int]>([]), on: loop)
            // What every push does: a deadline far ahead, cancelled as soon as the answer comes.
            for _ in 0..<10_000 {
                loop.schedule(after: .seconds(8)) { fired.value.value.append(-1) }.cancel()
            }
            // Live timers among them survive the rebuilds and still fire in order.
            for ms in [20, 10] {
                loop.schedule(after: .milliseconds(ms)) { fired.value.value.append(ms) }
            }
            for _ in 0..<1000 {
                loop.schedule(after: .seconds(8)) { fired.value.value.append(-1) }.cancel()
            }
            let pending = loop.pendingTimerCount
            loop.schedule(after: .milliseconds(40)) { result.fulfill((pending, fired.value.value)) }
        }
        let seen = try #require(await result.value())
        #expect(seen.pending <= 2 * (2 + EventLoop.cancelledTimersKept) + 1)
        #expect(seen.fired == [10, 20])
    }
}

/// The kernel's CLOCK_MONOTONIC, read directly, in nanoseconds.
private func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
