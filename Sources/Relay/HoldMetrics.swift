import Observability

/// The series of holding (README "When Apple is out of reach"), registered with the relay's.
package final class HoldMetrics: Sendable {
    /// 1 when pushes Apple cannot take are held, 0 when holding is off.
    package let enabled: Gauge
    /// What the store holds now, and the age of its oldest push; set at each scrape from the
    /// delivery's last count.
    package let heldNow: Gauge
    package let heldBytes: Gauge
    package let oldestAgeSeconds: Gauge
    /// The caps in force, so an alert can say "near the cap" without knowing the settings.
    package let limitPushes: Gauge
    package let limitBytes: Gauge
    /// Pushes answered 201 because they were held.
    package let held: Counter
    /// Held pushes Apple accepted later.
    package let delivered: Counter
    /// Held pushes Apple refused with a 4xx when they were sent again (or whose app is gone).
    package let refused: Counter
    /// Held pushes dropped at arrival + TTL, never sent.
    package let expired: Counter
    /// Older pushes of a device dropped to keep it under `HOLD_MAX_PER_DEVICE`.
    package let droppedForDeviceCap: Counter
    private let registry: MetricsRegistry

    package init(registry: MetricsRegistry) {
        self.registry = registry
        enabled = registry.gauge("relay_hold_enabled", help: "1 when pushes Apple cannot take are held on disk, 0 when holding is off.")
        heldNow = registry.gauge("relay_held_pushes", help: "Pushes held now because Apple could not take them.")
        heldBytes = registry.gauge("relay_held_bytes", help: "Bytes of the pushes held now.")
        oldestAgeSeconds = registry.gauge("relay_held_oldest_age_seconds", help: "Age of the oldest held push; 0 when none is held.")
        limitPushes = registry.gauge("relay_hold_limit_pushes", help: "HOLD_MAX_PUSHES: the most pushes the store holds.")
        limitBytes = registry.gauge("relay_hold_limit_bytes", help: "HOLD_MAX_BYTES: the most bytes the store holds.")
        held = registry.counter("relay_held_pushes_total", help: "Pushes answered 201 because they were held for later delivery.")
        delivered = registry.counter("relay_held_delivered_total", help: "Held pushes Apple accepted when they were sent again.")
        refused = registry.counter("relay_held_refused_total", help: "Held pushes Apple refused for good when they were sent again (a dead token, a request it can never take).")
        expired = registry.counter("relay_held_expired_total", help: "Held pushes dropped at arrival + TTL, never sent.")
        droppedForDeviceCap = registry.counter("relay_held_dropped_total", help: "Held pushes dropped before delivery, by reason.",
                                               labels: ["reason": "device_cap"])
        // Every reason from the start, at 0: a dashboard's rate and an alert see a series before
        // the first failure.
        for failure in [Failure.capReached, .diskFull, .storeError] { _ = failureCounter(failure) }
    }

    /// Why a push that should have been held was answered 503 instead.
    package enum Failure: String, Sendable {
        case capReached = "cap_reached"
        case diskFull = "disk_full"
        case storeError = "store_error"
    }

    package func countFailure(_ failure: Failure) { failureCounter(failure).increment() }

    private func failureCounter(_ failure: Failure) -> Counter {
        registry.counter("relay_hold_failures_total", help: "Pushes that should have been held but were answered 503: the store at its cap, the disk full, or the store failing.",
                         labels: ["reason": failure.rawValue])
    }
}
