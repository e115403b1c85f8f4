#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EventLoop
import Transport

/// One environment's connections, shared nothing: the pool is cut into shards, one per event loop
/// (as many as there are connections when the pool is smaller than the loop count), each with
/// its own `PoolStateMachine`, its share of the connections and of the queue, all touched on
/// its loop alone. A push sent on a loop goes to that loop's shard and, when a connection there
/// has a free stream, out on it and back without a lock or a thread hop. Only when the local
/// shard cannot take it (nothing ready, no free stream, pushes already waiting) does it go to
/// another shard's loop; retries that would land on the connection they failed on move the same
/// way (`.handOff`).
///
/// A loop without a shard of its own (pool smaller than the loop count) sends to shard
/// `loop index % shard count` on that shard's loop (one hop), or to another shard with room; a
/// push from outside any loop goes round the shards that have a connection up or coming.
final class APNsPool: Sendable {
    typealias Completion = @Sendable (Result<APNsResponse, APNsError>) -> Void
    typealias Instant = MonotonicInstant

    let environment: APNsEnvironment
    let endpoint: APNsEndpoint
    let configuration: APNsClientConfiguration
    let loops: [EventLoop]
    let observer: (any APNsClientObserver)?
    let unixTime: @Sendable () -> Int64
    let shards: [APNsPoolShard]
    /// The shard each loop sends to, by the loop's index.
    private let home: [Int]
    /// Spreads pushes from outside the loops, and hand-offs, over the shards.
    private let cursor = Atomic<UInt>(0)

    init(environment: APNsEnvironment, endpoint: APNsEndpoint, configuration: APNsClientConfiguration,
         loops: [EventLoop], observer: (any APNsClientObserver)?, unixTime: @escaping @Sendable () -> Int64) {
        self.environment = environment
        self.endpoint = endpoint
        self.configuration = configuration
        self.loops = loops
        self.observer = observer
        self.unixTime = unixTime
        let count = max(1, min(configuration.poolSize, loops.count))
        /// `total` spread over the shards, the first ones taking the remainder.
        func share(_ total: Int, _ index: Int) -> Int { total / count + (index < total % count ? 1 : 0) }
        var shards: [APNsPoolShard] = []
        for index in 0..<count {
            let machine = PoolConfiguration(
                poolSize: share(max(1, configuration.poolSize), index),
                queueCapacity: share(max(0, configuration.queueCapacity), index),
                maxRetries: configuration.maxRetries, backoffBase: configuration.backoffBase,
                backoffMax: configuration.backoffMax, stallGrace: configuration.stallGrace,
                maxStreamsPerConnection: configuration.maxStreamsPerConnection,
                shard: index, shards: count, handsOffRetries: count > 1,
                retriesTooManyRequests: configuration.retryPolicy.retriesTooManyRequests,
                retryDelay: configuration.retryPolicy.delayPerAttempt)
            shards.append(APNsPoolShard(index: index, loop: loops[index], machine: machine, environment: environment,
                                        endpoint: endpoint, configuration: configuration, observer: observer,
                                        unixTime: unixTime))
        }
        self.shards = shards
        self.home = loops.indices.map { $0 % count }
        for shard in shards { shard.pool = self }
    }

    /// Opens every shard's connections and starts their tickers.
    func start() {
        for shard in shards { shard.loop.execute { shard.start() } }
    }

    // MARK: Callers

    /// - Parameter timeout: this push's deadline from now, retries included; nil = `pushTimeout`.
    func send(_ notification: APNsNotification, timeout: Duration? = nil, completion: @escaping Completion) {
        let deadline = MonotonicInstant.now + (timeout ?? configuration.pushTimeout)
        let current = EventLoop.current
        var local: APNsPoolShard?
        if let current, let index = loops.firstIndex(where: { $0 === current }) { local = shards[home[index]] }
        // The normal path: this loop's shard can send it now, so nothing crosses threads.
        if let local, local.loop === current, local.canTakeNow {
            local.enqueue(notification, deadline: deadline, completion: completion)
            return
        }
        let target = route(preferring: local)
        if target.loop === current {
            target.enqueue(notification, deadline: deadline, completion: completion)
        } else {
            if current != nil { observer?.pushCrossedLoops(environment: environment) }
            target.loop.execute { target.enqueue(notification, deadline: deadline, completion: completion) }
        }
    }

    /// Where a push goes when the local shard cannot send it at once: a shard that can, else the
    /// local one while it has a connection up or coming, else the next shard that has one, else
    /// the local (or next) one, whose machine answers at once when no connection can come in time.
    /// Reads the other shards' published state: a stale read only queues the push there.
    private func route(preferring local: APNsPoolShard?) -> APNsPoolShard {
        let start = Int(cursor.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(shards.count))
        let rotation = (0..<shards.count).map { shards[(start + $0) % shards.count] }
        if let local {
            if let other = rotation.first(where: { $0 !== local && $0.published.canTakeNow }) { return other }
            if local.published.live { return local }
        }
        // From outside the loops: round the shards that have a way out, ignoring momentary room
        // (it lags behind pushes already on their way), so each shard's share of the queue holds.
        return rotation.first(where: { $0.published.live }) ?? local ?? rotation[0]
    }

    /// A retry that `from` could only give to the connection it failed on, or to none: its
    /// record moves to another shard, which ends it.
    func handOff(_ push: APNsPoolShard.Machine.Push, from: APNsPoolShard) {
        let others = shards.filter { $0 !== from }
        let start = Int(cursor.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(max(1, others.count)))
        let rotation = others.indices.map { others[(start + $0) % others.count] }
        // When no other shard has a way out, it goes back to where it was, as a fresh retry.
        let target = rotation.first { $0.published.canTakeNow } ?? rotation.first { $0.published.live } ?? from
        target.loop.execute { target.adopt(push) }
    }

    /// True when a push sent now could go out at once (a ready connection with a free stream limit).
    var isReady: Bool { shards.contains { $0.published.ready } }

    var stats: (open: Int, inFlight: Int, queued: Int) {
        shards.reduce((0, 0, 0)) { total, shard in
            let s = shard.published
            return (total.0 + s.open, total.1 + s.inFlight, total.2 + s.queued)
        }
    }

    /// Drains every connection while replacements open (a new client certificate).
    func retireConnections() {
        for shard in shards { shard.loop.execute { shard.handle(.retireConnections) } }
    }

    /// Fails queued pushes, lets in-flight ones end (their deadlines bound the wait), closes.
    func shutdown() async {
        await withTaskGroup(of: Void.self) { group in
            for shard in shards { group.addTask { await shard.shutdown() } }
        }
    }
}
