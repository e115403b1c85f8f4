import Testing
import Foundation
import Synchronization
import EventLoop
import MockAPNs
@testable import APNsCore
@testable import APNs

@Suite("push deadlines on a connection", .serialized)
struct DeadlineTimerTests {
    @Test("pushes in flight on one connection share one deadline timer instead of arming one each")
    func oneTimerForManyPushes() async throws {
        // The pool's tick arms a timer each time: one a minute keeps it out of the count, however
        // long a loaded machine takes over these pushes.
        let timers = TimerCount()
        let harness = try ClientHarness(poolSize: 1, faults: MockFaults(globalDelay: .milliseconds(200)), loops: 1,
                                        probe: timers) {
            $0.tickInterval = .seconds(60)
        }
        #expect(try await harness.waitUntilReady())
        let loop = harness.group.loops[0]
        let before = await Self.onLoop(loop) { timers.scheduled.load(ordering: .relaxed) }
        let ledger = Ledger()
        let count = 300
        for i in 0..<count {
            harness.client.send(Fixture.notification("", i), environment: .production, completion: ledger.completion(i))
        }
        #expect(try await ledger.wait(for: count))
        #expect(ledger.eachEndedOnce(count))
        #expect((0..<count).allSatisfy { (try? ledger.results[$0]?.get().ok) == true })
        let armed = await Self.onLoop(loop) { timers.scheduled.load(ordering: .relaxed) } - before
        // The connection's pings and the first tick arm a few; a timer per push would be 300 more.
        #expect(armed < 30, "\(armed) timers for \(count) pushes")
        await harness.close()
    }

    @Test("a push whose deadline is earlier than those already in flight still ends at its own deadline")
    func earlierDeadlineRearms() async throws {
        // A stall grace longer than the test: only the deadline timer can end the short push early
        // (a stalled connection would otherwise be replaced, failing it soon after its deadline).
        let harness = try ClientHarness(poolSize: 1, loops: 1) { $0.stallGrace = .seconds(30) }
        #expect(try await harness.waitUntilReady())
        let payload = try APNsPayload(json: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        // One answered push first, so the emulator raises its stream limit from 1 (as Apple does)
        // and both pushes below are on the wire rather than one waiting in the pool's queue.
        let first = await harness.client.send(Fixture.notification("", 0), environment: .production)
        #expect((try? first.get().ok) == true)
        let longDone = Flag()
        let long = Task {
            defer { longDone.set() }
            return try await harness.client.send(payload, to: Fixture.token(MockFaults.Prefix.neverAnswer, 1).hex,
                                                 options: APNsPushOptions(topic: Fixture.topic, timeout: .seconds(3)))
        }
        #expect(try await harness.waitForRecords(count: 2, timeout: .seconds(5)))
        await #expect(throws: APNsError(code: .timeout, message: "")) {
            try await harness.client.send(payload, to: Fixture.token(MockFaults.Prefix.neverAnswer, 2).hex,
                                          options: APNsPushOptions(topic: Fixture.topic, timeout: .milliseconds(200)))
        }
        // Not a timing assertion: only that the short push did not wait for the long one's deadline.
        #expect(!longDone.isSet, "the short push ended only after the long one")
        await #expect(throws: APNsError(code: .timeout, message: "")) { try await long.value }
        await harness.close()
    }

    private final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    private static func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: body()) }
        }
    }
}

/// Counts the timers the loops arm.
private final class TimerCount: EventLoopProbe {
    let scheduled = Atomic<Int>(0)
    func loopWokeUp() {}
    func wakeUpSignalled() {}
    func timerScheduled() { scheduled.wrappingAdd(1, ordering: .relaxed) }
}
