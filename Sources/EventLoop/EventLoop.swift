// EventLoop — one epoll loop per thread that owns its sockets and timers; work crosses
// threads through a bounded queue plus an eventfd wake-up.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import Observability
internal import CLinux

/// Facts about the machine that size the loop group.
package enum System {
    /// The CPUs this process may use (`CPUBudget`), so the default group runs one loop per CPU
    /// it can get and no more.
    package static var coreCount: Int { CPUBudget.current.cpus }
}

/// Anything the loop dispatches epoll events to, or must close when it shuts down.
protocol LoopRegistered: AnyObject {
    func handleEvents(_ events: UInt32)
    /// The loop is stopping: release the fd and tell the owner, exactly once.
    func closeForShutdown()
}

/// One epoll loop on its own thread; owns its sockets and timers.
///
/// Sockets are registered level-triggered: a stream that stops reading early (pause, or
/// the per-wake-up read budget) is simply woken again, so no readiness is ever lost.
///
/// `@unchecked Sendable`: only `execute`, `shutdown` and `inEventLoop` are called from
/// other threads and they use the locked queue, atomics and the eventfd; every other
/// member is confined to the loop's own thread (`schedule` checks it with a precondition;
/// the rest is reached only from the loop's own streams, listeners and jobs).
package final class EventLoop: @unchecked Sendable {
    /// Jobs queued through `execute` before callers on other threads must wait; a bound so
    /// that a producer faster than the loop slows down instead of growing memory forever.
    package static let defaultQueueCapacity = 65_536
    /// This loop's bound (`defaultQueueCapacity` unless a test asks for a small one).
    let queueCapacity: Int
    /// Bytes one `recv` may return; the buffer is shared by all streams of the loop.
    static let readBufferSize = 64 * 1024

    package let name: String
    let epfd: Int32
    private let wakeFD: Int32

    /// Where the loop is in its life, as the threads that queue work see it.
    enum RunState: Equatable {
        /// Takes jobs and runs them, turn after turn.
        case running
        /// `shutdown` was asked: the loop runs what is queued (and still takes jobs meanwhile),
        /// closes its sockets, then closes the queue.
        case stopping
        /// The loop took its last batch: jobs are refused and dropped without running.
        case closed
    }

    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        /// The storage of the batch the loop ran last, emptied: the next batch is queued into it,
        /// so a turn's jobs cost no new array.
        var spare: [@Sendable () -> Void] = []
        var state = RunState.running
        /// The eventfd was written and the loop has not taken the queue since: later jobs need
        /// no second write.
        var wakePending = false
        /// Callers blocked in `submit` on a full queue; the loop posts `room` once for each when
        /// it takes the queue (or closes it).
        var waitingForRoom = 0

        /// The callers waiting for room, who may all try again now: the queue was just taken.
        mutating func takeWaiters() -> Int {
            defer { waitingForRoom = 0 }
            return waitingForRoom
        }
    }
    private let queue = Mutex(Queue())
    /// Where callers wait while the queue is full (see `Queue.waitingForRoom`).
    private let room = DispatchSemaphore(value: 0)
    /// Told of wake-ups and timers, for tests that watch the loop (nil in production).
    private let probe: (any EventLoopProbe)?
    private let threadID = Atomic<UInt>(0)
    private let thread = Mutex<pthread_t?>(nil)

    /// Threads that run some event loop; they must never block on another loop's full queue.
    private static let loopThreads = Mutex<Set<UInt>>([])
    private static let sigpipeIgnored: Bool = { clinux_ignore_sigpipe(); return true }()

    // Loop-thread state.
    private var registrations = RegistrationTable<any LoopRegistered>()
    private var timers = TimerHeap<Timer>()
    private let cancelledTimers = CancelledTally()
    /// A job was queued on the loop's own thread since the queue was last taken: the loop must
    /// not sleep before running it.
    private var queuedFromLoop = false
    let readBuffer: UnsafeMutableRawBufferPointer

    /// Creates the epoll instance and starts the loop's thread; returns once it runs.
    /// `queueCapacity` bounds `execute`'s queue; `probe` hears of the loop's wake-ups.
    package init(name: String, queueCapacity: Int = EventLoop.defaultQueueCapacity,
                 probe: (any EventLoopProbe)? = nil) throws {
        precondition(queueCapacity > 0, "an event loop's queue needs room for one job")
        _ = Self.sigpipeIgnored
        self.name = name
        self.queueCapacity = queueCapacity
        self.probe = probe
        let ep = clinux_epoll_create()
        guard ep >= 0 else { throw SocketError.fromErrno(errno, "epoll_create for loop \(name)") }
        let ev = clinux_eventfd()
        guard ev >= 0 else {
            let e = errno
            Glibc.close(ep)
            throw SocketError.fromErrno(e, "eventfd for loop \(name)")
        }
        guard clinux_epoll_ctl(ep, CLINUX_EPOLL_CTL_ADD, ev, CLINUX_EPOLLIN, 0) == 0 else {
            let e = errno
            Glibc.close(ev); Glibc.close(ep)
            throw SocketError.fromErrno(e, "epoll_ctl for loop \(name)")
        }
        epfd = ep
        wakeFD = ev
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)

        let started = DispatchSemaphore(value: 0)
        switch ThreadBody.start({ [self] in self.run(started: started) }) {
        case .success(let tid): thread.withLock { $0 = tid }
        case .failure(let error): throw SocketError.fromErrno(error.number, "starting the thread of loop \(name)")
        }
        started.wait()
    }

    deinit {
        Glibc.close(wakeFD)
        Glibc.close(epfd)
        readBuffer.deallocate()
    }

    /// The loop whose thread runs the caller, or nil off every loop (a test, a Task). Lock-free
    /// (a thread-local), so a hot path can ask it per push to stay on its own loop.
    package static var current: EventLoop? {
        guard let pointer = pthread_getspecific(currentKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The thread-local slot behind `current`; each loop thread sets it for its whole run.
    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-local key for EventLoop.current")
        return key
    }()

    /// True on the loop's own thread, where loop-confined objects may be touched directly.
    package var inEventLoop: Bool {
        threadID.load(ordering: .acquiring) == pthread_self()
    }

    /// Runs `work` on the loop thread, soon, in submission order. Safe from any thread.
    ///
    /// When more than `queueCapacity` jobs wait, callers from non-loop threads wait for room
    /// (backpressure); loop threads never wait, so two loops can't deadlock on each other.
    /// After `shutdown` the job is dropped without running.
    package func execute(_ work: @escaping @Sendable () -> Void) {
        submit(work)
    }

    private enum SubmitOutcome { case queued, wake, full, rejected }

    /// Whether `execute` accepts jobs: false once the loop has taken its last batch.
    private static func accepts(_ state: RunState) -> Bool { state != .closed }

    /// `execute` that tells whether the job was accepted (false once the loop has shut down),
    /// so owners of fds can close them instead of leaking them.
    @discardableResult
    func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        // From the loop itself no wake-up is needed: the loop runs its queue before it sleeps
        // (every push's answer is queued this way, on the loop that read the request).
        if inEventLoop {
            let accepted = queue.withLock { q in
                if !Self.accepts(q.state) { return false }
                q.jobs.append(work)
                return true
            }
            if accepted { queuedFromLoop = true }
            return accepted
        }
        while true {
            let outcome: SubmitOutcome = queue.withLock { q in
                if !Self.accepts(q.state) { return .rejected }
                // Another loop's thread never waits (two loops could wait on each other); asked
                // only when the queue is full, so the common path takes no second lock.
                if q.jobs.count >= queueCapacity && !Self.isLoopThread() {
                    q.waitingForRoom += 1
                    return .full
                }
                q.jobs.append(work)
                if q.wakePending { return .queued }
                q.wakePending = true
                return .wake
            }
            switch outcome {
            case .queued: return true
            case .wake:
                probe?.wakeUpSignalled()
                _ = clinux_eventfd_signal(wakeFD)
                return true
            case .rejected: return false
            case .full:
                // A full queue has a wake-up pending (the job that made it non-empty wrote the
                // eventfd), so the loop will take it and post `room`; then try again.
                room.wait()
            }
        }
    }

    /// Callers blocked in `submit` until the loop takes its full queue.
    var callersWaitingForRoom: Int { queue.withLock { $0.waitingForRoom } }

    private static func isLoopThread() -> Bool {
        let me = pthread_self()
        return loopThreads.withLock { $0.contains(me) }
    }

    /// Runs `work` on the loop after `delay`. Loop thread only; the returned timer's
    /// `cancel()` is O(1) (a flag; the heap drops the entry when it comes due, or sooner: once
    /// cancelled entries are more than half of the heap, the heap is rebuilt without them).
    @discardableResult
    package func schedule(after delay: Duration, _ work: @escaping () -> Void) -> Timer {
        precondition(inEventLoop, "EventLoop.schedule must be called on the loop thread")
        // Timers cancelled long before they are due (timeouts of work that finished) would
        // otherwise stay in the heap until then: at thousands a second, megabytes of memory
        // and a deep heap to sift.
        if cancelledTimers.count > Self.cancelledTimersKept && cancelledTimers.count * 2 > timers.count {
            timers.removeAll { timer in
                guard timer.isCancelled else { return false }
                timer.inHeap = false
                return true
            }
            cancelledTimers.count = 0
        }
        let timer = Timer(work, tally: cancelledTimers)
        probe?.timerScheduled()
        timers.insert(timer, deadline: LoopClock.now() + LoopClock.nanoseconds(delay))
        return timer
    }

    /// Timers scheduled and not yet due, cancelled ones still in the heap included.
    var pendingTimerCount: Int { timers.count }

    /// Below this many cancelled entries the heap is never rebuilt: not worth a pass.
    static let cancelledTimersKept = 64

    /// How many of the heap's timers are cancelled, kept by the timers themselves.
    final class CancelledTally {
        var count = 0
    }

    /// Stops the loop and joins its thread. Jobs already queued run first; then every open
    /// socket is closed (streams see `streamDidClose` with `.loopShutDown`), pending timers
    /// are dropped, and later `execute` calls are dropped. Called on the loop itself it
    /// only requests the stop (a thread cannot join itself). Safe to call twice.
    package func shutdown() {
        let wake = queue.withLock { q -> Bool in
            if q.state == .running { q.state = .stopping }
            if q.wakePending { return false }
            q.wakePending = true
            return true
        }
        if wake { _ = clinux_eventfd_signal(wakeFD) }
        if inEventLoop { return }
        thread.withLock { tid in
            if let t = tid {
                pthread_join(t, nil)
                tid = nil
            }
        }
    }

    /// A callback scheduled on the loop; cancel it before it fires and it never runs.
    /// Confined to the loop thread.
    package final class Timer {
        fileprivate var work: (() -> Void)?
        package private(set) var isCancelled = false
        /// Still in the loop's heap (not yet popped or dropped).
        fileprivate var inHeap = true
        private let tally: CancelledTally

        fileprivate init(_ work: @escaping () -> Void, tally: CancelledTally) {
            self.work = work
            self.tally = tally
        }

        /// Prevents the callback from running and releases what it captured.
        package func cancel() {
            if !isCancelled && inHeap { tally.count += 1 }
            isCancelled = true
            work = nil
        }

        /// Called as the heap gives the timer up.
        fileprivate func popped() {
            inHeap = false
            if isCancelled { tally.count -= 1 }
        }

        fileprivate func fire() {
            guard !isCancelled, let w = work else { return }
            work = nil
            w()
        }
    }

    // MARK: - Registration (loop thread)

    /// Keeps `object` alive and reachable from epoll events until `untrack`; the id (never 0)
    /// is what its fd is registered with.
    func track(_ object: LoopRegistered) -> UInt64 {
        registrations.insert(object)
    }

    /// Forgets `id`'s object; a stale id (already untracked) changes nothing.
    func untrack(_ id: UInt64) { registrations.remove(id) }

    /// Number of live registrations, for leak checks in tests.
    var registrationCount: Int { registrations.count }

    /// Adds `fd` to epoll; returns 0 or the errno.
    func watch(fd: Int32, id: UInt64, events: UInt32) -> Int32 {
        clinux_epoll_ctl(epfd, CLINUX_EPOLL_CTL_ADD, fd, events, id) == 0 ? 0 : errno
    }

    /// Changes the interest set (and possibly the id) of a watched fd; returns 0 or the errno.
    func rewatch(fd: Int32, id: UInt64, events: UInt32) -> Int32 {
        clinux_epoll_ctl(epfd, CLINUX_EPOLL_CTL_MOD, fd, events, id) == 0 ? 0 : errno
    }

    func unwatch(fd: Int32) {
        _ = clinux_epoll_ctl(epfd, CLINUX_EPOLL_CTL_DEL, fd, 0, 0)
    }

    // MARK: - The loop

    private func run(started: DispatchSemaphore) {
        let me = pthread_self()
        threadID.store(me, ordering: .releasing)
        Self.loopThreads.withLock { _ = $0.insert(me) }
        // Unretained: the thread's body holds the loop for as long as the thread runs.
        pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(Self.currentKey, nil) }
        clinux_set_thread_name(name)
        started.signal()

        // Log lines go out in one write per turn, or per few milliseconds on a busy loop.
        LogBatching.begin()
        defer { LogBatching.end() }
        let maxEvents: Int32 = 256
        let events = UnsafeMutablePointer<clinux_epoll_event>.allocate(capacity: Int(maxEvents))
        defer { events.deallocate() }
        var logDue: Int64?
        while true {
            let n = clinux_epoll_wait(epfd, events, maxEvents, queuedFromLoop ? 0 : timeoutMilliseconds(logDue: logDue))
            probe?.loopWokeUp()
            if n > 0 {
                for i in 0..<Int(n) {
                    let ev = events[i]
                    if ev.data == 0 {
                        _ = clinux_eventfd_drain(wakeFD)
                    } else if let target = registrations.object(for: ev.data) {
                        target.handleEvents(ev.events)
                    }
                }
            }
            fireDueTimers()
            let stopping = runQueuedJobs()
            logDue = LogBatching.endOfTurn(now: LoopClock.now())
            if stopping { break }
        }
        closeEverything()
        Self.loopThreads.withLock { _ = $0.remove(me) }
        threadID.store(0, ordering: .releasing)
    }

    /// Milliseconds until the nearest timer, rounded up so a timer never spins the loop;
    /// -1 (sleep until an event) when no timer is pending.
    private func timeoutMilliseconds(logDue: Int64? = nil) -> Int32 {
        var wait: Int64?
        if let deadline = timers.nearestDeadline { wait = deadline - LoopClock.now() }
        // Held log lines wake the loop when they are due, like a timer.
        if let logDue { wait = min(wait ?? logDue, logDue) }
        guard let wait else { return -1 }
        return LoopClock.milliseconds(wait)
    }

    private func fireDueTimers() {
        guard !timers.isEmpty else { return }
        let now = LoopClock.now()
        while let timer = timers.popDue(now: now) {
            timer.popped()
            timer.fire()
        }
    }

    /// Runs the queued batch; returns true when the loop was asked to stop.
    private func runQueuedJobs() -> Bool {
        // What the loop queued so far is in this batch; what its jobs queue waits for the next turn.
        queuedFromLoop = false
        let taken = queue.withLock { q in
            var b = q.spare
            swap(&b, &q.jobs)
            q.spare = []
            q.wakePending = false
            return (b, q.state != .running, q.takeWaiters())
        }
        letWaitersRetry(taken.2)
        var batch = taken.0
        for job in batch { job() }
        // Kept only while small: a burst must not pin its list.
        if batch.capacity <= 4096 {
            batch.removeAll(keepingCapacity: true)
            queue.withLock { q in if q.spare.capacity < batch.capacity { swap(&q.spare, &batch) } }
        }
        return taken.1
    }

    /// Wakes callers that found the queue full: it is empty now (or closed), so each tries again.
    private func letWaitersRetry(_ count: Int) {
        for _ in 0..<count { room.signal() }
    }

    /// Shutdown: run what was queued, close every registration, repeat until nothing is
    /// left, then refuse further jobs. Bounded so a job that re-queues itself can't hang it.
    private func closeEverything() {
        for round in 0..<1000 {
            let (batch, waiting) = queue.withLock { q in
                let b = q.jobs
                q.jobs = []
                if b.isEmpty || round == 999 { q.state = .closed }
                return (b, q.takeWaiters())
            }
            letWaitersRetry(waiting)
            for job in batch { job() }
            let open = registrations.objects
            for object in open { object.closeForShutdown() }
            registrations.removeAll()
            if batch.isEmpty { break }
        }
        let waiting = queue.withLock { q in
            q.state = .closed
            q.jobs = []
            return q.takeWaiters()
        }
        letWaitersRetry(waiting)
        timers.removeAll()
        cancelledTimers.count = 0
    }
}

/// Moves a loop-confined value (a connection, a stream: classes that are not `Sendable`)
/// through a `@Sendable` closure that runs on that same loop. `@unchecked Sendable` is sound
/// because `value` can be read on `loop`'s thread alone: anywhere else is a precondition
/// failure, not a data race. The check is an atomic load and a `pthread_self`, no allocation.
package struct LoopBound<Value>: @unchecked Sendable {
    private let stored: Value
    package let loop: EventLoop

    package init(_ value: Value, on loop: EventLoop) {
        self.stored = value
        self.loop = loop
    }

    /// The value; call on `loop`'s thread only.
    package var value: Value {
        precondition(loop.inEventLoop, "a loop-bound value was touched off its loop")
        return stored
    }
}
