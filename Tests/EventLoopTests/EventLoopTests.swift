import Dispatch
import Foundation
import Synchronization
import Testing
@testable import EventLoop

// Serialized: the fd-leak test counts the process's sockets, and 2 shared cores run the rest.
@Suite("EventLoop", .serialized)
struct EventLoopTests {
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
        let loop = try EventLoop(name: "self-submit-test")
        defer { loop.shutdown() }
        let done = Waiter<Int>()
        loop.execute {
            let before = loop.wakeSignalCount.load(ordering: .relaxed)
            loop.execute {
                // Queued while the loop runs its queue: the loop must not sleep (no timer is
                // pending, so a sleep would be forever).
                loop.execute { done.fulfill(loop.wakeSignalCount.load(ordering: .relaxed) - before) }
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

    @Test("an idle loop sleeps until its timer is due: the timer fires on time, not early, without spinning")
    func idleLoopSleepsUntilTimer() async throws {
        let loop = try EventLoop(name: "timer-sleep-test")
        defer { loop.shutdown() }
        let done = Waiter<(wakeUps: Int, elapsed: Duration)>()
        loop.execute {
            let start = ContinuousClock.now
            let wakeUps = loop.wakeUpCount
            // 100.4 ms: the fraction of a millisecond must round the sleep up, not to a spin.
            loop.schedule(after: .microseconds(100_400)) {
                done.fulfill((loop.wakeUpCount - wakeUps, ContinuousClock.now - start))
            }
        }
        let result = try #require(await done.value(timeout: 5))
        #expect(result.elapsed >= .microseconds(100_400))
        #expect(result.elapsed < .seconds(2))
        #expect(result.wakeUps <= 3, "the loop woke \(result.wakeUps) times for one timer")
    }

    @Test("the loop clock converts delays rounding up, never below zero or past its cap")
    func loopClockConversions() async throws {
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
        // Monotonic, and in nanoseconds: a 20 ms sleep moves it by about 20,000,000.
        let before = LoopClock.now()
        try await Task.sleep(for: .milliseconds(20))
        let slept = LoopClock.now() - before
        #expect(slept >= 20_000_000 && slept < 2_000_000_000)
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

    @Test("an echo server on 127.0.0.1 echoes 64 KiB to each of 200 concurrent clients")
    func echo200Clients() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = EchoHandler()
        }
        defer { listener.close() }
        let clients = 200, size = 64 * 1024
        let tally = Mutex((ok: 0, bad: [String]()))
        let done = Waiter<Bool>()
        @Sendable func report(_ problem: String?) {
            let finished = tally.withLock { t -> Bool in
                if let p = problem { t.bad.append(p) } else { t.ok += 1 }
                return t.ok + t.bad.count == clients
            }
            if finished { done.fulfill(true) }
        }
        for i in 0..<clients {
            connect(to: listener.localPort, on: group.next()) { result in
                switch result {
                case .failure(let e): report("client \(i): \(e)")
                case .success(let stream):
                    let payload = pattern(size, seed: i)
                    stream.handler = Collector(expected: size, onComplete: { c in
                        report(c.received == payload ? nil : "client \(i): echo differs")
                        stream.close()
                    }, onClose: { c in
                        if c.received.count < size { report("client \(i): closed early \(String(describing: c.closeError))") }
                    })
                    stream.write(payload)
                }
            }
        }
        #expect(await done.value(timeout: 15) == true)
        let t = tally.withLock { $0 }
        #expect(t.ok == clients)
        #expect(t.bad.isEmpty, "\(t.bad.prefix(3))")
    }

    @Test("8 MiB written to a slow reader arrive intact and the writer sees the drain")
    func largeWriteToSlowReader() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let size = 8 * 1024 * 1024
        let drained = Waiter<Int>()  // pending bytes seen right after write
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            let pendingAfterWrite = LoopBound(Box(0), on: stream.loop)
            let writer = Collector()
            stream.handler = DrainNotifier(inner: writer) { drained.fulfill(pendingAfterWrite.value.value) }
            stream.write(pattern(size))
            pendingAfterWrite.value.value = stream.pendingWriteBytes
        }
        defer { listener.close() }
        let received = Waiter<Bool>()
        connect(to: listener.localPort, on: group.loops[1]) { result in
            guard case .success(let stream) = result else { received.fulfill(false); return }
            let expected = pattern(size)
            let reader = SlowReader(expected: expected) { ok in received.fulfill(ok); stream.close() }
            stream.handler = reader
        }
        #expect(await received.value(timeout: 15) == true)
        let pending = await drained.value()
        #expect(pending != nil)
        #expect((pending ?? 0) > 0, "the write should have been buffered, so the drain is meaningful")
    }

    @Test("a peer's close reaches streamDidClose exactly once with no error")
    func peerCloseOnce() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let serverClosed = Waiter<Bool>()
        let serverSeen = Mutex((count: 0, errorIsNil: false, received: [UInt8]()))
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = Collector(onClose: { c in
                serverSeen.withLock { $0.count += 1; $0.errorIsNil = c.closeError == nil; $0.received = c.received }
                serverClosed.fulfill(true)
            })
        }
        defer { listener.close() }
        let clientClosed = Waiter<(Int, Bool)>()
        connect(to: listener.localPort, on: group.loops[0]) { result in
            guard case .success(let stream) = result else { clientClosed.fulfill((0, false)); return }
            let c = Collector()
            stream.handler = c
            stream.write(Array("bye".utf8))
            stream.close()
            stream.close()  // a second close is harmless
            clientClosed.fulfill((c.closeCount, c.closeError == nil))
        }
        let local = await clientClosed.value()
        #expect(local?.0 == 1)
        #expect(local?.1 == true)
        #expect(await serverClosed.value() == true)
        // Give a spurious second close a chance to show up before counting.
        for loop in group.loops {
            let w = Waiter<Bool>()
            loop.execute { loop.schedule(after: .milliseconds(20)) { w.fulfill(true) } }
            _ = await w.value()
        }
        let seen = serverSeen.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.errorIsNil)
        #expect(seen.received == Array("bye".utf8))
    }

    @Test("a request that arrives whole is read with one recv, not a second one that only says EAGAIN")
    func shortReadEndsTheReads() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let serverStream = Waiter<TCPStream>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = Collector(expected: 300, onComplete: { _ in serverStream.fulfill(stream) })
        }
        defer { listener.close() }
        let client = Waiter<TCPStream>()
        connect(to: listener.localPort, on: loop) { result in
            guard case .success(let stream) = result else { return }
            stream.handler = Collector()
            stream.write([UInt8](repeating: 0x61, count: 300))
            client.fulfill(stream)
        }
        let stream = try #require(await serverStream.value())
        // A few loop turns for a read that should not happen.
        let calls = Waiter<Int>()
        loop.execute { loop.schedule(after: .milliseconds(30)) { calls.fulfill(stream.recvCalls) } }
        #expect(await calls.value() == 1)
        let clientStream = await client.value()
        loop.execute { clientStream?.close() }
    }

    @Test("a peer that shuts down its sending side still reads the answer; the loop sleeps meanwhile")
    func halfCloseAnswered() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let seen = Mutex((eofs: 0, closes: 0, error: false, wakeUpsAtEOF: 0, wakeUpsAtAnswer: 0))
        let closed = Waiter<Bool>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = LateAnswerer(delay: .milliseconds(200), onEOF: {
                seen.withLock { $0.eofs += 1; $0.wakeUpsAtEOF = loop.wakeUpCount }
            }, onAnswer: {
                seen.withLock { $0.wakeUpsAtAnswer = loop.wakeUpCount }
            }, onClose: { error in
                seen.withLock { $0.closes += 1; $0.error = error != nil }
                closed.fulfill(true)
            })
        }
        defer { listener.close() }
        let answer = await halfClosingClient(port: listener.localPort, send: Array("question".utf8))
        #expect(answer == Array("answer to question".utf8))
        #expect(await closed.value() == true)
        // Give a spurious second close a chance to show up before counting.
        let settled = Waiter<Int>()
        loop.execute { loop.schedule(after: .milliseconds(20)) { settled.fulfill(loop.registrationCount) } }
        #expect(await settled.value() == 1, "only the listener stays registered")
        let s = seen.withLock { $0 }
        #expect(s.eofs == 1)
        #expect(s.closes == 1)
        #expect(!s.error)
        // The EOF stays readable: still watching EPOLLIN would wake the loop thousands of times.
        #expect(s.wakeUpsAtAnswer - s.wakeUpsAtEOF < 20, "\(s.wakeUpsAtAnswer - s.wakeUpsAtEOF) wake-ups in 200 ms")
        #expect(openSocketCount(port: listener.localPort) == 1, "only the listener")
    }

    @Test("after the peer's EOF a write that fails still closes the stream, once, with the error")
    func halfCloseWriteError() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let closes = Mutex((count: 0, error: SocketError?.none))
        let closed = Waiter<Bool>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = LateAnswerer(delay: .milliseconds(10), repeats: 200, onClose: { error in
                closes.withLock { $0.count += 1; $0.error = error }
                closed.fulfill(true)
            })
        }
        defer { listener.close() }
        _ = await halfClosingClient(port: listener.localPort, send: Array("gone".utf8), closeAfterEOF: true)
        #expect(await closed.value() == true)
        let settled = Waiter<Bool>()
        group.loops[0].execute { group.loops[0].schedule(after: .milliseconds(20)) { settled.fulfill(true) } }
        _ = await settled.value()
        let c = closes.withLock { $0 }
        #expect(c.count == 1)
        #expect(c.error != nil, "the peer is gone: the close reports why")
        #expect(openSocketCount(port: listener.localPort) == 1, "only the listener")
    }

    @Test("connecting to a closed port fails promptly with connection refused")
    func connectRefused() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { _ in }
        let port = listener.localPort
        listener.close()
        let outcome = Waiter<SocketError?>()
        connect(to: port, on: group.loops[0]) { result in
            switch result {
            case .success(let stream): stream.close(); outcome.fulfill(nil)
            case .failure(let e): outcome.fulfill(e)
            }
        }
        let error = try #require(await outcome.value())
        #expect(error?.code == .connectionRefused)
        #expect(error?.description.contains("connection refused") == true)
    }

    @Test("an IPv6 listener on :: accepts a client on ::1")
    func ipv6Echo() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "::", port: 0, group: group) { $0.handler = EchoHandler() }
        defer { listener.close() }
        let echoed = Waiter<(String, [UInt8])>()
        connect(to: listener.localPort, host: "::1", on: group.loops[0]) { result in
            guard case .success(let stream) = result else { echoed.fulfill(("", [])); return }
            let peer = stream.peerAddress?.description ?? ""
            stream.handler = Collector(expected: 5, onComplete: { c in echoed.fulfill((peer, c.received)); stream.close() })
            stream.write(Array("hello".utf8))
        }
        let result = await echoed.value()
        #expect(result?.0 == "[::1]:\(listener.localPort)")
        #expect(result?.1 == Array("hello".utf8))
    }

    @Test("closeAfterFlush delivers every buffered byte, then closes")
    func closeAfterFlush() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let size = 1024 * 1024
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = EchoHandler()
            stream.write(pattern(size, seed: 3))
            stream.closeAfterFlush()
            stream.write([1, 2, 3])  // ignored after closeAfterFlush
        }
        defer { listener.close() }
        let result = Waiter<(Bool, Bool)>()
        connect(to: listener.localPort, on: group.loops[1]) { r in
            guard case .success(let stream) = r else { result.fulfill((false, false)); return }
            stream.handler = Collector(onClose: { c in
                result.fulfill((c.received == pattern(size, seed: 3), c.closeError == nil))
            })
        }
        let r = await result.value()
        #expect(r?.0 == true)
        #expect(r?.1 == true)
    }

    @Test("500 connect/close cycles leave no socket fd and no loop registration behind")
    func noFdLeak() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let cycles = 500
        let serverCloses = Mutex(0)
        let serverDone = Waiter<Bool>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = Collector(onClose: { _ in
                if serverCloses.withLock({ $0 += 1; return $0 }) == cycles { serverDone.fulfill(true) }
            })
        }
        defer { listener.close() }
        let before = openSocketCount(port: listener.localPort)
        #expect(before == 1, "only the listener")
        let clientDone = Waiter<Int>()
        // Ten chains of 50 sequential cycles each.
        let failures = Mutex(0)
        let finishedChains = Mutex(0)
        @Sendable func cycle(_ remaining: Int, on loop: EventLoop) {
            if remaining == 0 {
                if finishedChains.withLock({ $0 += 1; return $0 }) == 10 { clientDone.fulfill(failures.withLock { $0 }) }
                return
            }
            connect(to: listener.localPort, on: loop) { result in
                switch result {
                case .success(let stream): stream.close()
                case .failure: failures.withLock { $0 += 1 }
                }
                cycle(remaining - 1, on: loop)
            }
        }
        for i in 0..<10 { cycle(cycles / 10, on: group.loops[i % 2]) }
        #expect(await clientDone.value(timeout: 15) == 0)
        #expect(await serverDone.value(timeout: 15) == true)
        #expect(openSocketCount(port: listener.localPort) == before)
        var registrations = 0
        for loop in group.loops {
            let w = Waiter<Int>()
            loop.execute { w.fulfill(loop.registrationCount) }
            registrations += await w.value() ?? -1
        }
        #expect(registrations == 1, "only the listener stays registered")
        listener.close()
        #expect(openSocketCount(port: listener.localPort) == 0)
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
        loop.execute { usleep(20_000); ran.store(true, ordering: .relaxed) }
        loop.shutdown()
        let didRun = ran.load(ordering: .relaxed)
        #expect(didRun)
        #expect(closeCode.withLock { $0 } == .loopShutDown)
        // pthread_join returns once the thread is done, a moment before the kernel takes its task
        // out of /proc: poll, with a bound.
        #expect(await eventually { !threadNames().contains("el-joincheck") })
        let accepted = loop.submit {}
        #expect(!accepted, "work after shutdown is refused")
        loop.shutdown()  // twice is harmless
    }
}

/// Polls `condition` every 10 ms until it holds or `seconds` pass; true when it held.
func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

/// Names of this process's threads.
func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// A mutable cell for loop-confined closures.
final class Box<T> {
    var value: T
    init(_ value: T) { self.value = value }
}

/// Forwards to `inner` and reports the first drain.
final class DrainNotifier: TCPStreamHandler {
    let inner: TCPStreamHandler
    let onDrain: () -> Void
    init(inner: TCPStreamHandler, onDrain: @escaping () -> Void) { self.inner = inner; self.onDrain = onDrain }
    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) { inner.streamDidRead(stream, bytes) }
    func streamDidDrainWrites(_ stream: TCPStream) { onDrain() }
    func streamDidClose(_ stream: TCPStream, error: SocketError?) { inner.streamDidClose(stream, error: error) }
}

/// Reads one buffer, pauses, and resumes 1 ms later: a reader slower than the writer.
final class SlowReader: TCPStreamHandler {
    let expected: [UInt8]
    var offset = 0
    var intact = true
    let done: (Bool) -> Void
    init(expected: [UInt8], done: @escaping (Bool) -> Void) { self.expected = expected; self.done = done }
    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        if offset + bytes.count > expected.count {
            intact = false
        } else if expected.withUnsafeBytes({ memcmp($0.baseAddress! + offset, bytes.baseAddress!, bytes.count) }) != 0 {
            intact = false
        }
        offset += bytes.count
        if offset >= expected.count { done(intact && offset == expected.count); return }
        stream.pauseReading()
        stream.loop.schedule(after: .milliseconds(1)) { stream.resumeReading() }
    }
    func streamDidDrainWrites(_ stream: TCPStream) {}
    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        if offset < expected.count { done(false) }
    }
}

/// Collects what the peer sends; on its EOF answers after `delay` ("answer to …"), and
/// with `repeats` > 1 keeps writing every `delay` until the stream closes.
final class LateAnswerer: TCPStreamHandler {
    let delay: Duration
    var repeats: Int
    let onEOF: () -> Void
    let onAnswer: () -> Void
    let onClose: (SocketError?) -> Void
    var received: [UInt8] = []

    init(delay: Duration, repeats: Int = 1, onEOF: @escaping () -> Void = {}, onAnswer: @escaping () -> Void = {},
         onClose: @escaping (SocketError?) -> Void) {
        self.delay = delay
        self.repeats = repeats
        self.onEOF = onEOF
        self.onAnswer = onAnswer
        self.onClose = onClose
    }

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        received.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
    }
    func streamDidReadEOF(_ stream: TCPStream) {
        onEOF()
        answer(stream)
    }
    private func answer(_ stream: TCPStream) {
        stream.loop.schedule(after: delay) { [self] in
            guard stream.isOpen else { return }
            repeats -= 1
            if repeats == 0 {
                onAnswer()
                stream.write(Array("answer to ".utf8) + received)
                stream.closeAfterFlush()
            } else {
                stream.write(received)
                answer(stream)
            }
        }
    }
    func streamDidDrainWrites(_ stream: TCPStream) {}
    func streamDidClose(_ stream: TCPStream, error: SocketError?) { onClose(error) }
}

@Suite("CPU budget: the loops a process may run")
struct CPUBudgetTests {
    @Test("the smallest of the online CPUs, the affinity mask and the cgroup quota, a quota rounded up, at least 1")
    func decide() {
        #expect(CPUBudget.decide(online: 64, affinity: nil, cgroupV2Max: nil, cgroupV1Quota: nil, cgroupV1Period: nil)
                == CPUBudget(cpus: 64, reason: "online CPUs"))
        #expect(CPUBudget.decide(online: 64, affinity: 4, cgroupV2Max: "max 100000\n", cgroupV1Quota: nil, cgroupV1Period: nil)
                == CPUBudget(cpus: 4, reason: "CPU affinity"))
        // Kubernetes' `limits.cpu: 100m` on a 64-core node: one loop, not 64.
        #expect(CPUBudget.decide(online: 64, affinity: 64, cgroupV2Max: "10000 100000\n", cgroupV1Quota: nil, cgroupV1Period: nil)
                == CPUBudget(cpus: 1, reason: "cgroup v2 cpu.max 10000 100000"))
        // `docker --cpus 1.5`: rounded up to 2.
        #expect(CPUBudget.decide(online: 8, affinity: 8, cgroupV2Max: "150000 100000", cgroupV1Quota: nil, cgroupV1Period: nil).cpus == 2)
        #expect(CPUBudget.decide(online: 8, affinity: nil, cgroupV2Max: nil, cgroupV1Quota: "300000\n", cgroupV1Period: "100000\n")
                == CPUBudget(cpus: 3, reason: "cgroup v1 cpu.cfs_quota_us 300000 / cpu.cfs_period_us 100000"))
        // No quota (v1 -1), or a quota above the affinity: the affinity decides.
        #expect(CPUBudget.decide(online: 8, affinity: 2, cgroupV2Max: nil, cgroupV1Quota: "-1", cgroupV1Period: "100000").reason == "CPU affinity")
        #expect(CPUBudget.decide(online: 8, affinity: 2, cgroupV2Max: "800000 100000", cgroupV1Quota: nil, cgroupV1Period: nil).cpus == 2)
        // Garbage and zeroes change nothing; never below 1.
        #expect(CPUBudget.decide(online: 0, affinity: 0, cgroupV2Max: "0 0", cgroupV1Quota: "x", cgroupV1Period: "y")
                == CPUBudget(cpus: 1, reason: "online CPUs"))
    }

    @Test("this process's budget is at least 1 and at most the online CPUs, and the default group uses it")
    func current() throws {
        let budget = CPUBudget.current
        #expect(budget.cpus >= 1 && budget.cpus <= max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        #expect(System.coreCount == budget.cpus)
    }
}
