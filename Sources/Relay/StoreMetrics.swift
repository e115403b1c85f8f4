import Observability
import PushStore

/// The store's own series, whichever engine holds: is it up, how long its calls take, how they
/// fail. (README "Metrics"; the alerts read these names.)
package final class StoreMetrics: Sendable {
    /// 1 while the store can be used (its file open, or Redis answering), 0 otherwise; 0 when
    /// holding is off.
    package let up: Gauge
    private let registry: MetricsRegistry

    /// What a store call was, as `relay_store_call_seconds`'s `call` label.
    package enum Call: String, Sendable, CaseIterable {
        case put, take, finish, release
        case dropExpired = "drop_expired"
        case counts
    }

    /// How a store call failed, as `relay_store_errors_total`'s `kind` label.
    package enum ErrorKind: String, Sendable, CaseIterable {
        /// Redis did not answer (down, out of reach, timed out).
        case unreachable
        /// No room: a cap, a full disk, Redis at its maxmemory.
        case full
        case other

        init?(_ code: PushStoreError.Code) {
            switch code {
            case .unreachable: self = .unreachable
            case .capReached, .diskFull: self = .full
            case .closed: return nil
            case .storeFailed, .cannotOpen, .inUse: self = .other
            }
        }
    }

    package init(registry: MetricsRegistry) {
        self.registry = registry
        up = registry.gauge("relay_store_up", help: "1 while the store of held pushes can be used (its file open, or Redis answering); 0 otherwise.")
        // Every series from the start, at 0.
        for call in Call.allCases { _ = histogram(call) }
        for kind in ErrorKind.allCases { _ = counter(kind) }
    }

    package func observe(_ call: Call, seconds: Double) { histogram(call).observe(seconds) }

    package func count(_ error: PushStoreError) {
        if let kind = ErrorKind(error.code) { counter(kind).increment() }
    }

    private func histogram(_ call: Call) -> Histogram {
        registry.histogram("relay_store_call_seconds", help: "Time from a call to the store of held pushes to its answer, by call.",
                           labels: ["call": call.rawValue],
                           buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
    }

    private func counter(_ kind: ErrorKind) -> Counter {
        registry.counter("relay_store_errors_total", help: "Calls to the store of held pushes that failed: Redis unreachable, the store full (a cap, the disk, maxmemory), other.",
                         labels: ["kind": kind.rawValue])
    }
}
