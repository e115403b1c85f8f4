import Dispatch
import Foundation
import Synchronization
import Testing
import TestWaits
@testable import EventLoop

@Suite("EventLoop: jobs sent from any thread")
struct LoopJobTests {
    @Test("execute from many threads runs every job exactly once")
    func executeExactlyOnce() async throws {
        let loop = try EventLoop(name: "exec-test")
        defer { loop.shutdown() }
        let threads = 8, perThread = 10_000  // 80k jobs: more than the queue bound
        let counts = Mutex([Int](repeating: 0, count: threads * perThread))
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                loop.execute { counts.withLock { $0[t * perThread + i] += 1 } }
            }
        }
        let done = Waiter<Bool>()
        loop.execute { done.fulfill(true) }
        #expect(await done.value() == true)
        let all = counts.withLock { $0 }
        #expect(all.allSatisfy { $0 == 1 })
    }

    @Test("a job queued on the loop's own thread needs no eventfd wake-up, and a job it queues still runs")
    func selfQueuedJobsNeedNoWakeUp() async throws {
        let probe = LoopEventCount()
        let loop = try EventLoop(name: "self-submit-test", probe: probe)
        defer { loop.shutdown() }
        let done = Waiter<Int>()
        loop.execute {
            let before = probe.wakeUpsSignalled.load(ordering: .relaxed)
            loop.execute {
                // Queued while the loop runs its queue: the loop must not sleep (no timer is
                // pending, so a sleep would be forever).
                loop.execute { done.fulfill(probe.wakeUpsSignalled.load(ordering: .relaxed) - before) }
            }
        }
        #expect(await done.value(timeout: 5) == 0)
    }

    @Test("a loop-bound value is read on its loop, and reading it anywhere else stops the process")
    func loopBoundChecksItsLoop() async throws {
        let loop = try EventLoop(name: "bound-test")
        defer { loop.shutdown() }
        let done = Waiter<Int>()
        let bound = LoopBound(Box(41), on: loop)
        loop.execute {
            bound.value.value += 1
            done.fulfill(bound.value.value)
        }
        #expect(await done.value(timeout: 5) == 42)
        // Off the loop (here, the test's thread) the read is a precondition failure, not a race.
        await #expect(processExitsWith: .failure) {
            let other = try EventLoop(name: "bound-exit-test")
            let value = LoopBound(Box(0), on: other)
            _ = value.value
        }
    }

    @Test("a caller that finds the queue full waits until the loop takes it, then every job runs, in order")
    func fullQueueMakesCallersWait() async throws {
        let loop = try EventLoop(name: "full-queue-test", queueCapacity: 4)
        defer { loop.shutdown() }
        // The loop is held inside a job, so nothing it is sent runs until the gate opens.
        let gate = DispatchSemaphore(value: 0)
        let holding = Waiter<Bool>()
        loop.execute { holding.fulfill(true); gate.wait() }
        #expect(await holding.value() == true)
        let ran = Mutex([Int]())
        let submitted = Atomic(0)
        let producer = Waiter<Bool>()
        let jobs = 10
        // From a thread of its own (not a loop's): the fifth job finds four waiting and must wait.
        Thread.detachNewThread {
            for i in 0..<jobs {
                loop.execute { ran.withLock { $0.append(i) } }
                submitted.add(1, ordering: .relaxed)
            }
            producer.fulfill(true)
        }
        #expect(try await eventually { loop.callersWaitingForRoom == 1 }, "the producer waits for room")
        #expect(submitted.load(ordering: .relaxed) == 4, "it waits at the fifth job, with four queued")
        #expect(ran.withLock { $0 }.isEmpty)
        gate.signal()
        #expect(await producer.value() == true)
        let done = Waiter<[Int]>()
        loop.execute { done.fulfill(ran.withLock { $0 }) }
        #expect(await done.value() == Array(0..<jobs))
        #expect(loop.callersWaitingForRoom == 0)
    }

    @Test("shutdown runs queued work, closes open streams and joins the thread")
    func shutdownJoins() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { $0.handler = EchoHandler() }
        defer { listener.close() }
        let loop = try EventLoop(name: "el-joincheck")
        #expect(threadNames().contains("el-joincheck"))
        let connected = Waiter<Bool>()
        let closeCode = Mutex<SocketError.Code?>(nil)
        connect(to: listener.localPort, on: loop) { result in
            guard case .success(let stream) = result else { connected.fulfill(false); return }
            stream.handler = Collector(onClose: { c in closeCode.withLock { $0 = c.closeError?.code } })
            connected.fulfill(true)
        }
        #expect(await connected.value() == true)
        let ran = Atomic(false)
        // A job that queues another: shutdown runs both before it returns.
        loop.execute { loop.execute { ran.store(true, ordering: .relaxed) } }
        loop.shutdown()
        let didRun = ran.load(ordering: .relaxed)
        #expect(didRun)
        #expect(closeCode.withLock { $0 } == .loopShutDown)
        // pthread_join returns once the thread is done, a moment before the kernel takes its task
        // out of /proc: poll, with a bound.
        #expect(try await eventually { !threadNames().contains("el-joincheck") })
        let accepted = loop.submit {}
        #expect(!accepted, "work after shutdown is refused")
        loop.shutdown()  // twice is harmless
    }
}
