import APNs
import Basics
import Observability
import PushStore

/// Holding what Apple could not take: the store (`HeldStoreOwner`), the puts the responder makes
/// before it answers 201, and the delivery that empties the store when Apple is back.
package final class Holding: Sendable {
    private let owner: HeldStoreOwner
    private let delivery: HeldDelivery
    private let metrics: HoldMetrics

    /// - Parameter senders: the sender of a held push's app ("" is the default app); nil when
    ///   the relay no longer serves it.
    package init(owner: HeldStoreOwner, configuration: HoldConfiguration, pushTimeout: Duration, metrics: HoldMetrics,
                 logger: Logger, now: @escaping @Sendable () -> WallTime,
                 senders: @escaping @Sendable (String) -> (any APNsSending)?) {
        self.owner = owner
        self.metrics = metrics
        delivery = HeldDelivery(owner: owner, inFlight: configuration.deliveryInFlight, pushTimeout: pushTimeout,
                                metrics: metrics, logger: logger, now: now, senders: senders)
        metrics.enabled.set(1)
        metrics.limitPushes.set(configuration.limits.maxEntries)
        metrics.limitBytes.set(configuration.limits.maxBytes)
        // A store the last run left: deliver what it holds. (Otherwise nothing runs until the
        // first push is held: an idle relay keeps its event loops as its only threads.)
        if owner.openStore != nil { delivery.wake() }
    }

    /// Stores `push` durably, then calls `completion`: success means it survives a kill -9 and
    /// will be delivered once Apple takes it; a failure (counted here) is why it could not be
    /// held, and the caller answers 503 as before. Runs `completion` on the store's thread.
    package func hold(_ push: HeldPush, completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void) {
        let store: any HeldPushStore
        switch owner.store() {
        case .success(let open): store = open
        case .failure(let error): return completion(.failure(counted(error)))
        }
        store.put([push]) { result in
            switch result {
            case .success(let receipt):
                self.metrics.held.increment()
                if receipt.droppedForDeviceCap > 0 { self.metrics.droppedForDeviceCap.increment(by: receipt.droppedForDeviceCap) }
                completion(.success(()))
                self.delivery.wake()
            case .failure(let error):
                completion(.failure(self.counted(error)))
            }
        }
    }

    private func counted(_ error: PushStoreError) -> PushStoreError {
        let failure: HoldMetrics.Failure = switch error.code {
        case .capReached: .capReached
        case .diskFull: .diskFull
        default: .storeError
        }
        metrics.countFailure(failure)
        return error
    }

    /// What the store held at its last count.
    package var counts: HeldCounts { delivery.counts }

    /// Whether the store can be used now (`/health`'s `store_ok`, `relay_store_up`).
    package var storeAvailable: Bool { owner.isAvailable }

    /// The store in use: `sqlite:/path` or `redis://host:port/db`.
    package var storeLabel: String { owner.label }

    /// Sets the gauges from the last count (at each scrape).
    package func updateGauges(nowMs: Int64) {
        let counts = delivery.counts
        metrics.heldNow.set(counts.entries)
        metrics.heldBytes.set(counts.bytes)
        metrics.oldestAgeSeconds.set(counts.oldestArrivalMs.map { Double(max(0, nowMs - $0)) / 1000 } ?? 0)
    }

    /// Stops delivering and closes the store: what was held stays in the file for the next run.
    package func close() {
        delivery.stop()
        owner.close()
    }
}
