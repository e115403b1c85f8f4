/// The pool's settings, as each shard's state machine sees them.
struct PoolConfiguration: Sendable {
    /// Connections kept open; Apple prefers a few long-lived connections to many short ones.
    var poolSize: Int
    /// Pushes waiting for a free stream; beyond this we answer `overloaded` at once.
    var queueCapacity: Int
    /// Extra attempts after a retryable failure (500, 503, Shutdown, refused stream, lost connection).
    var maxRetries: Int
    /// First reconnect delay after a failure; doubles per consecutive failure.
    var backoffBase: Duration
    /// Apple treats rapid reconnects as an attack; never wait longer than this either.
    var backoffMax: Duration
    /// How long past a push's deadline an unanswered stream may linger before its connection is replaced.
    var stallGrace: Duration
    /// Streams one connection may open before it is retired: HTTP/2 client stream ids end at
    /// 2^31 (2^30 requests), so a connection drains well before and a fresh one takes its slot.
    var maxStreamsPerConnection: Int
    /// This machine's place among machines that share one pool (one per event loop), and their
    /// number: connection ids are `shard + 1 + k * shards`, so no two machines hand out the same.
    var shard: Int
    var shards: Int
    /// A retry that can go nowhere here but to the connection it just failed on (or nowhere at
    /// all) leaves as `.handOff` instead of waiting: the owner gives it to another machine.
    var handsOffRetries: Bool
    /// Whether Apple's 429 TooManyRequests is retried (using one of `maxRetries`), and how
    /// long a retried answer (500/503/Shutdown, 429) waits per attempt: see `APNsRetryPolicy`.
    var retriesTooManyRequests: Bool
    var retryDelay: Duration

    /// Every default of the pool, written once: `APNsClientConfiguration` starts from these.

    init(poolSize: Int = 2, queueCapacity: Int = 1000, maxRetries: Int = 2,
         backoffBase: Duration = .seconds(1), backoffMax: Duration = .seconds(60), stallGrace: Duration = .seconds(2),
         maxStreamsPerConnection: Int = 1_000_000_000,
         shard: Int = 0, shards: Int = 1, handsOffRetries: Bool = false,
         retriesTooManyRequests: Bool = false, retryDelay: Duration = .zero) {
        self.retriesTooManyRequests = retriesTooManyRequests
        self.retryDelay = max(.zero, retryDelay)
        self.shards = max(1, shards)
        self.shard = min(max(0, shard), self.shards - 1)
        self.handsOffRetries = handsOffRetries
        self.poolSize = max(1, poolSize)
        self.queueCapacity = max(0, queueCapacity)
        self.maxRetries = max(0, maxRetries)
        self.backoffBase = backoffBase
        self.backoffMax = backoffMax
        self.stallGrace = stallGrace
        self.maxStreamsPerConnection = max(1, maxStreamsPerConnection)
    }

    /// No slot connects more often than this, whatever ended its last connection: twice the
    /// first backoff step, 2 s with the defaults. A peer that sends GOAWAY after every
    /// request ends connections that all carried work, so no backoff grows: this alone keeps
    /// the slot from reconnecting in a loop. Apple's routine GOAWAY comes after minutes or
    /// hours, so its replacement opens at once.
    var minimumConnectInterval: Duration { backoffBase * 2 }
}
