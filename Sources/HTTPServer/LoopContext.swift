#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Synchronization

/// One loop's share of the server: its connections (for the timeout sweep, drain and the
/// request budget), the idle ones in the order they became idle (for the connection cap),
/// the cached Date header and the buffer responses are serialized into.
///
/// `@unchecked Sendable`: it is shared through `HTTPServerCore`, but every member except the
/// immutable ones and the atomics `oldestFreshNanos`/`oldestKeptNanos` is touched only on `loop`'s thread (all
/// callers hop with `execute`).
final class LoopContext: @unchecked Sendable {
    let loop: EventLoop
    let configuration: HTTPServerConfiguration
    let counters: ServerCounters
    let budget: RequestBudget
    private let logger: HTTPServerLogger?
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    private var draining = false
    private var closed = false
    private var dateSecond = -1
    private var dateText = ""
    /// Reused for every response on this loop: one serialization buffer, no per-request allocation.
    var output: [UInt8] = []
    /// HTTPS only, reused by every TLS connection of this loop: what one read decrypts to, and
    /// what OpenSSL hands over to be sent. Made on first use, so a plain server never has them;
    /// per connection they would cost 64 KiB for each of thousands.
    var tlsPlaintext: [UInt8] = []
    private var tlsCiphertextStorage: UnsafeMutableRawBufferPointer?

    /// Idle connections, longest idle first, one list per `IdleKind` (a connection joins its
    /// list's tail when it becomes idle, so each list stays in `idleSince` order).
    private var idleHeads: [HTTPConnection?] = [nil, nil]
    private var idleTails: [HTTPConnection?] = [nil, nil]
    /// Each head's `idleSince` (0: none idle), for other loops' cap decisions. Every time here
    /// is in `LoopClock` nanoseconds (`ServerClock`), which count from the machine's boot and so are never 0.
    private let oldestFreshNanos = Atomic<Int64>(0)
    private let oldestKeptNanos = Atomic<Int64>(0)
    /// Connections of this loop paused for the request budget.
    var budgetPausedCount = 0
    /// One loop decides when freed memory goes back to the system.
    private var trimPolicy: MemoryTrimPolicy?

    init(loop: EventLoop, configuration: HTTPServerConfiguration, counters: ServerCounters,
         trimsMemory: Bool, logger: HTTPServerLogger?) {
        self.loop = loop
        self.configuration = configuration
        self.counters = counters
        self.logger = logger
        budget = RequestBudget(limit: configuration.maxBufferedRequestBytes)
        trimPolicy = trimsMemory ? MemoryTrimPolicy() : nil
        output.reserveCapacity(4096)
    }

    deinit {
        tlsCiphertextStorage?.deallocate()
    }

    var isDraining: Bool { draining }

    /// 64 KiB, so a turn's answers to one connection leave in one send.
    var tlsCiphertext: UnsafeMutableRawBufferPointer {
        if let storage = tlsCiphertextStorage { return storage }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        tlsCiphertextStorage = storage
        return storage
    }

    /// The Date header value, formatted at most once per second per loop.
    var date: String {
        let now = Int(time(nil))
        if now != dateSecond {
            dateSecond = now
            dateText = httpDate(now)
        }
        return dateText
    }

    func add(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = connection
        if draining { connection.beginDrain() }
    }

    func remove(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = nil
        setIdle(connection, nil)
    }

    // MARK: Idle connections, for the cap

    /// Since when this loop's longest-idle connection of `kind` has been idle; readable from any loop.
    func oldestIdle(_ kind: IdleKind) -> Int64? {
        let nanos = kind == .fresh ? oldestFreshNanos.load(ordering: .relaxed) : oldestKeptNanos.load(ordering: .relaxed)
        return nanos == 0 ? nil : nanos
    }

    /// Puts the connection on the tail of its kind's idle list, or takes it off.
    func setIdle(_ connection: HTTPConnection, _ idle: IdleKind?) {
        guard idle != connection.listedIdle else { return }
        if let listed = connection.listedIdle {
            let k = listed.rawValue
            let previous = connection.idlePrevious, next = connection.idleNext
            if let previous { previous.idleNext = next } else { idleHeads[k] = next }
            if let next { next.idlePrevious = previous } else { idleTails[k] = previous }
            connection.idlePrevious = nil
            connection.idleNext = nil
            connection.listedIdle = nil
            if previous == nil { publishOldestIdle(listed) }
        }
        if let idle {
            let k = idle.rawValue
            connection.listedIdle = idle
            connection.idlePrevious = idleTails[k]
            connection.idleNext = nil
            idleTails[k]?.idleNext = connection
            idleTails[k] = connection
            if idleHeads[k] == nil {
                idleHeads[k] = connection
                publishOldestIdle(idle)
            }
        }
    }

    private func publishOldestIdle(_ kind: IdleKind) {
        var nanos: Int64 = 0
        if let head = idleHeads[kind.rawValue] { nanos = max(1, head.idleSince) }
        switch kind {
        case .fresh: oldestFreshNanos.store(nanos, ordering: .relaxed)
        case .kept: oldestKeptNanos.store(nanos, ordering: .relaxed)
        }
    }

    /// Closes the connection of `kind` idle the longest (it has nothing in progress, so
    /// nothing is lost) if it has been idle at least `minimum` nanoseconds; false when there is none.
    func evictLongestIdle(_ kind: IdleKind, idleAtLeast minimum: Int64, now: Int64) -> Bool {
        guard let victim = idleHeads[kind.rawValue], now - victim.idleSince >= minimum else { return false }
        victim.closeNow()
        return true
    }

    /// At the cap with nothing idle: answers 408 to this loop's slowest request still arriving
    /// (a trickled body, a stuck head), so the new connection has room; false when there is none.
    func cutSlowestArriving(cap: ConnectionCap, now: Int64) -> Bool {
        let arriving = connections.values.filter { $0.budgetCandidate != nil }
        guard let index = cap.slowestToCut(arriving.map { $0.budgetCandidate! }, now: now) else { return false }
        arriving[index].cutForCap()
        return true
    }

    // MARK: The request budget

    /// Over the budget: answers 408 to the slowest of this loop's half-received requests until
    /// the total is back under the resume mark; under it, lets paused connections read again.
    func enforceBudget(now: Int64) {
        let total = counters.bufferedBytes.load(ordering: .relaxed)
        if total > budget.limit {
            let arriving = connections.values.filter { $0.budgetCandidate != nil }
            let open = counters.open.load(ordering: .relaxed)
            let cut = budget.victims(total: total, open: open, candidates: arriving.map { $0.budgetCandidate! }, now: now)
            for index in cut { arriving[index].cutForBudget() }
            if !cut.isEmpty {
                let cuts = counters.budgetCuts.wrappingAdd(cut.count, ordering: .relaxed).newValue
                if cuts == cut.count || cuts / 1000 != (cuts - cut.count) / 1000 {
                    logger?("http buffered request bytes over \(budget.limit); answered 408 to the slowest senders (\(cuts) so far)")
                }
            }
        }
        if budgetPausedCount > 0 && budget.mayResume(total: counters.bufferedBytes.load(ordering: .relaxed)) {
            for connection in Array(connections.values) { connection.resumeAfterBudgetPause() }
        }
    }

    // MARK: Sweep, drain, stop

    func scheduleSweep() {
        guard !closed else { return }
        loop.schedule(after: configuration.sweepInterval) { [self] in
            sweep(now: configuration.clock.now())
            scheduleSweep()
        }
    }

    private func sweep(now: Int64) {
        if var policy = trimPolicy {
            let trim = policy.observe(bufferedBytes: counters.bufferedBytes.load(ordering: .relaxed),
                                      openConnections: counters.open.load(ordering: .relaxed))
            trimPolicy = policy
            // It walks the whole heap: off the loop, on a thread that ends with it (if none can
            // start, the memory is given back at a later trim).
            if trim { _ = DetachedThread.start(name: "malloc-trim") { Allocator.giveBackFreeMemory() } }
        }
        guard !connections.isEmpty else { return }
        // Acting may close connections, which mutates the dictionary: collect first.
        for connection in Array(connections.values) {
            connection.checkTimeouts(now: now)
        }
        enforceBudget(now: now)
    }

    func beginDrain() {
        draining = true
        for connection in Array(connections.values) {
            connection.beginDrain()
        }
    }

    func closeAll() {
        draining = true
        closed = true
        for connection in Array(connections.values) {
            connection.closeNow()
        }
    }
}
