internal import EventLoop
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The held pushes in Redis (a stream and its consumer group; `RedisScripts` says what is
/// where), shared by every relay that names the same `STORE_URL`: each takes what is due under
/// a lease of its own, and a relay that vanished leaves its leased pushes to the others once
/// the leases run out.
///
/// Threading as `SQLitePushStore`'s: one thread of the store's own holds the connection (hiredis's
/// blocking API, every wait bounded by `timeout`) and serves every request waiting in one
/// pipelined round trip. Durable before a put is answered as far as Redis makes it: with
/// `appendonly yes` and `appendfsync always` Redis fsyncs its log before it replies.
package final class RedisPushStore: HeldPushStore {
    private let queue = RequestQueue<StoreRequest>()
    private let stats = RedisStatistics()
    package let address: RedisAddress
    /// This store's consumer in the group (host, process, a random part): its leases' owner.
    package let consumer: String

    /// Starts the store's thread; connecting happens there, so a Redis that is down does not
    /// stop this (calls answer `unreachable` until it answers).
    package init(address: RedisAddress, limits: HoldLimits, timeout: Duration = .seconds(2)) throws(PushStoreError) {
        self.address = address
        consumer = Self.consumerName()
        let worker = RedisWorker(address: address, limits: limits, timeout: timeout, stats: stats, consumer: consumer)
        let holder = RedisWorkerHolder(worker)
        let queue = queue
        let started = DetachedThread.start(name: "held-store") {
            while true {
                let (batch, closing) = queue.takeAll(idleAfter: .seconds(1))
                if batch.isEmpty && !closing { holder.worker?.idle() } else { holder.worker?.serve(batch) }
                if closing && batch.isEmpty { break }
            }
            holder.worker?.letGo()
            holder.worker = nil // frees the connection before close() returns
            queue.markFinished()
        }
        guard started else {
            queue.markFinished()
            throw PushStoreError(.cannotOpen, "cannot start the store's thread")
        }
    }

    deinit { close() }

    /// True while the store's connection to Redis works (at its last use or ping).
    package var isAvailable: Bool { stats.up.load(ordering: .relaxed) }

    /// Turns that sent puts since the start (one script call, one fsync each): for tests and the bench.
    package var commits: Int { stats.putTurns.load(ordering: .relaxed) }

    package func put(_ pushes: [HeldPush], completion: @escaping @Sendable (Result<PutReceipt, PushStoreError>) -> Void) {
        if !queue.append(.put(pushes, completion)) { completion(.failure(Self.closedError)) }
    }

    package func take(max: Int, nowMs: Int64, leaseMs: Int64,
                      completion: @escaping @Sendable (Result<[StoredPush], PushStoreError>) -> Void) {
        if !queue.append(.take(max: max, nowMs: nowMs, leaseMs: leaseMs, completion)) { completion(.failure(Self.closedError)) }
    }

    package func finish(_ ids: [HeldPushID], completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void) {
        if !queue.append(.finish(ids, completion)) { completion(.failure(Self.closedError)) }
    }

    package func release(_ ids: [HeldPushID], completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void) {
        if !queue.append(.release(ids, completion)) { completion(.failure(Self.closedError)) }
    }

    package func dropExpired(nowMs: Int64, completion: @escaping @Sendable (Result<Int, PushStoreError>) -> Void) {
        if !queue.append(.dropExpired(nowMs: nowMs, completion)) { completion(.failure(Self.closedError)) }
    }

    package func counts(completion: @escaping @Sendable (Result<HeldCounts, PushStoreError>) -> Void) {
        if !queue.append(.counts(completion)) { completion(.failure(Self.closedError)) }
    }

    /// Answers what was asked, gives this consumer's leased pushes back (due at once for the
    /// other relays) and disconnects.
    package func close() {
        queue.close()
        queue.waitUntilFinished()
    }

    /// Holds the thread before its next turn until `resumeWriter` (tests of group commit).
    package func pauseWriter() { queue.setPaused(true) }
    package func resumeWriter() { queue.setPaused(false) }

    private static let closedError = PushStoreError(.closed, "the store is closed")

    private static func consumerName() -> String {
        var host = [UInt8](repeating: 0, count: 256)
        let named = host.withUnsafeMutableBufferPointer { gethostname(UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), 255) } == 0
        let name = named ? String(decoding: host.prefix { $0 != 0 }, as: UTF8.self) : "relay"
        let random = String(UInt32.random(in: .min ... .max), radix: 16)
        return "\(name)-\(getpid())-\(random)"
    }
}

/// What the store's thread tells the callers' threads.
final class RedisStatistics: Sendable {
    let up = Atomic<Bool>(false)
    let putTurns = Atomic<Int>(0)
}

/// The store thread's reference to its worker, dropped when the thread ends.
final class RedisWorkerHolder: @unchecked Sendable {
    var worker: RedisWorker?
    init(_ worker: RedisWorker) { self.worker = worker }
}
