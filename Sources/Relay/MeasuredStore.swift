import PushStore

/// A store whose every call is timed and whose failures are counted (`StoreMetrics`), in front
/// of either engine.
final class MeasuredStore: HeldPushStore {
    private let base: any HeldPushStore
    private let metrics: StoreMetrics

    init(_ base: any HeldPushStore, metrics: StoreMetrics) {
        self.base = base
        self.metrics = metrics
    }

    var isAvailable: Bool { base.isAvailable }

    private func measured<T: Sendable>(_ call: StoreMetrics.Call, _ completion: @escaping @Sendable (Result<T, PushStoreError>) -> Void)
        -> @Sendable (Result<T, PushStoreError>) -> Void {
        let started = ContinuousClock.now
        let metrics = metrics
        return { result in
            metrics.observe(call, seconds: Double((ContinuousClock.now - started) / .microseconds(1)) / 1_000_000)
            if case .failure(let error) = result { metrics.count(error) }
            completion(result)
        }
    }

    func put(_ pushes: [HeldPush], completion: @escaping @Sendable (Result<PutReceipt, PushStoreError>) -> Void) {
        base.put(pushes, completion: measured(.put, completion))
    }

    func take(max: Int, nowMs: Int64, leaseMs: Int64, completion: @escaping @Sendable (Result<[StoredPush], PushStoreError>) -> Void) {
        base.take(max: max, nowMs: nowMs, leaseMs: leaseMs, completion: measured(.take, completion))
    }

    func finish(_ ids: [HeldPushID], completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void) {
        base.finish(ids, completion: measured(.finish, completion))
    }

    func release(_ ids: [HeldPushID], completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void) {
        base.release(ids, completion: measured(.release, completion))
    }

    func dropExpired(nowMs: Int64, completion: @escaping @Sendable (Result<Int, PushStoreError>) -> Void) {
        base.dropExpired(nowMs: nowMs, completion: measured(.dropExpired, completion))
    }

    func counts(completion: @escaping @Sendable (Result<HeldCounts, PushStoreError>) -> Void) {
        base.counts(completion: measured(.counts, completion))
    }

    func close() { base.close() }
}
