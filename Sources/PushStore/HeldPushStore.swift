/// Where the relay keeps pushes Apple could not take, without knowing the engine behind it
/// (SQLite on local disk, `SQLitePushStore`; Redis Streams, `RedisPushStore`: XADD, XREADGROUP,
/// XACK + XDEL and XAUTOCLAIM map onto put, take, finish and an expired lease).
///
/// Every call answers through `completion`, once, on a thread of the store's own (a caller on
/// an event loop hops back itself; only a call after `close` is answered at once, `closed`, on
/// the caller's thread), and never throws: a failure is a `PushStoreError` value. Completions
/// must be short; the store's next work waits for them.
///
/// Delivery is at-least-once per store, never twice at the same time: a push taken is leased
/// to its taker until it is finished (delivered, or refused for good), released (put back) or
/// the lease runs out (a taker that vanished); no other take returns it meanwhile.
package protocol HeldPushStore: AnyObject, Sendable {
    /// Stores `pushes` durably and only then calls `completion` with their ids: a success means
    /// they survive a crash of the process and a power loss. Pushes put together arrive in one
    /// commit with other puts waiting at the time. All or none of `pushes` are stored.
    func put(_ pushes: [HeldPush], completion: @escaping @Sendable (Result<PutReceipt, PushStoreError>) -> Void)

    /// At most `max` pushes, oldest first, that are due at `nowMs` (not leased, not expired),
    /// each leased to this taker until `nowMs + leaseMs`.
    func take(max: Int, nowMs: Int64, leaseMs: Int64,
              completion: @escaping @Sendable (Result<[StoredPush], PushStoreError>) -> Void)

    /// Removes taken pushes for good (Apple answered). An id no longer held is ignored.
    func finish(_ ids: [HeldPushID], completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void)

    /// Ends the lease of taken pushes without removing them: they are due again at once.
    func release(_ ids: [HeldPushID], completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void)

    /// Removes every push whose arrival + TTL is at or before `nowMs` and that is not leased (taken,
    /// neither finished nor released, its lease not run out: its answer, or a sweep after its
    /// lease ends, settles it); answers how many went.
    func dropExpired(nowMs: Int64, completion: @escaping @Sendable (Result<Int, PushStoreError>) -> Void)

    /// Whether the store can be used now: its file is open, or its server answered at the last
    /// call or ping (what `/health` shows as `store_ok`). Read from any thread, never waits.
    var isAvailable: Bool { get }

    /// What is held now.
    func counts(completion: @escaping @Sendable (Result<HeldCounts, PushStoreError>) -> Void)

    /// Answers everything asked before, then stops; every later call answers `closed`. Returns
    /// when the store has let go of its resources (the file, the connection).
    func close()
}

extension HeldPushStore {
    package func put(_ pushes: [HeldPush]) async -> Result<PutReceipt, PushStoreError> {
        await withCheckedContinuation { continuation in put(pushes) { continuation.resume(returning: $0) } }
    }

    package func take(max: Int, nowMs: Int64, leaseMs: Int64) async -> Result<[StoredPush], PushStoreError> {
        await withCheckedContinuation { continuation in
            take(max: max, nowMs: nowMs, leaseMs: leaseMs) { continuation.resume(returning: $0) }
        }
    }

    package func finish(_ ids: [HeldPushID]) async -> Result<Void, PushStoreError> {
        await withCheckedContinuation { continuation in finish(ids) { continuation.resume(returning: $0) } }
    }

    package func release(_ ids: [HeldPushID]) async -> Result<Void, PushStoreError> {
        await withCheckedContinuation { continuation in release(ids) { continuation.resume(returning: $0) } }
    }

    package func dropExpired(nowMs: Int64) async -> Result<Int, PushStoreError> {
        await withCheckedContinuation { continuation in dropExpired(nowMs: nowMs) { continuation.resume(returning: $0) } }
    }

    package func counts() async -> Result<HeldCounts, PushStoreError> {
        await withCheckedContinuation { continuation in counts { continuation.resume(returning: $0) } }
    }
}
