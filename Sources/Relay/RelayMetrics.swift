import Synchronization
import APNs
import Observability

/// The relay's metrics, registered once so the hot path only increments cached objects.
///
/// Series whose labels come from a small fixed set (routes, statuses, Apple's reasons) are
/// looked up through the registry, which returns the cached object for known labels.
package final class RelayMetrics: Sendable {
    package let registry: MetricsRegistry

    /// Pushes between "request read" and "answer ready": what a drain waits for.
    package let pushesInFlight: Gauge
    /// Inbound HTTP connections open now; set from the server at scrape time.
    package let openConnections: Gauge
    /// End-to-end push latency as the sender sees it (parse, APNs round trip, mapping).
    package let pushDuration: Histogram
    /// Payloads sent without `m`/`s`/`k` because they did not fit Apple's 4096 bytes.
    package let degradedPayloads: Counter
    /// Connections opened to replace one that ended (lost, failed, drained, retired).
    package let reconnects: Counter
    /// APNs connections open now.
    package let apnsConnections: Gauge
    /// Pushes that went to another event loop's APNs connections (a thread hop each way).
    package let crossLoopPushes: Counter
    /// Pushes waiting for a free stream to APNs (both environments), set at each scrape.
    package let queuedPushes: Gauge
    /// The process's resident memory, open and allowed file descriptors, set at each scrape.
    package let residentBytes: Gauge
    package let openFileDescriptors: Gauge
    package let maxFileDescriptors: Gauge
    /// Pushes sent again by the client (GOAWAY, REFUSED_STREAM, lost connection, stale token).
    package let pushRetries: Counter
    /// The series nearly every push increments, resolved once: a registry lookup builds and
    /// sorts a label key under a lock, which cost more than the rest of the metrics together.
    /// Made on first use, like every labelled series, so `/metrics` shows them only once counted.
    private let hot = Mutex<HotSeries>(HotSeries())

    private struct HotSeries {
        var pushesCreated: Counter?
        var relayToCreated: Counter?
        var apnsAccepted: Counter?
    }

    package init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        pushesInFlight = registry.gauge("relay_pushes_in_flight", help: "Pushes being relayed now.")
        openConnections = registry.gauge("relay_http_open_connections", help: "Inbound HTTP connections open now.")
        pushDuration = registry.histogram(
            "relay_push_duration_seconds", help: "Time from a push request read to its answer.",
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 10])
        degradedPayloads = registry.counter(
            "relay_degraded_payloads_total", help: "Pushes sent as alert + id only because the message did not fit 4096 bytes.")
        reconnects = registry.counter("relay_apns_reconnects_total", help: "APNs connections opened to replace one that ended.")
        apnsConnections = registry.gauge("relay_apns_connections_open", help: "APNs connections open now.")
        pushRetries = registry.counter("relay_apns_push_retries_total", help: "Pushes the APNs client sent again.")
        crossLoopPushes = registry.counter("relay_apns_cross_loop_pushes_total",
                                           help: "Pushes sent on one event loop that went out on another loop's APNs connection.")
        queuedPushes = registry.gauge("relay_apns_queued_pushes", help: "Pushes waiting for a free stream to APNs.")
        residentBytes = registry.gauge("process_resident_memory_bytes", help: "Resident memory size in bytes.")
        openFileDescriptors = registry.gauge("process_open_fds", help: "Number of open file descriptors.")
        maxFileDescriptors = registry.gauge("process_max_fds", help: "Maximum number of open file descriptors.")
        unknownAppPushes = registry.counter(
            "relay_unknown_app_pushes_total",
            help: "Pushes to /{app}/... for an app the relay does not serve (502): APPS_FILE lost the app, or a sender guessed a name.")
        hold = HoldMetrics(registry: registry)
        store = StoreMetrics(registry: registry)
        registry.gauge("relay_build_info", help: "The relay's version, as apns-relay --version prints it; always 1.",
                       labels: ["version": RelayVersion.current]).set(1)
    }

    /// The pushes of an `APPS_FILE` app, by app, route and status (the default app's are the
    /// rest of `relay_http_requests_total`'s push routes).
    package func countAppRequest(app: String, route: String, status: Int) {
        registry.counter("relay_app_requests_total", help: "Push requests of the apps of APPS_FILE, by app, route and status.",
                         labels: ["app": app, "route": route, "status": String(status)]).increment()
    }

    /// Seconds until the certificate HTTPS is served with expires; shown only when the relay serves HTTPS.
    package var httpsCertificateExpiry: Gauge {
        registry.gauge("relay_https_certificate_expiry_seconds", help: "Seconds until the certificate the relay serves HTTPS with expires.")
    }

    /// Seconds until an app's push certificate expires (negative once it has), set at each scrape.
    package func setCertificateExpiry(app: String, seconds: Int64) {
        registry.gauge(Self.certificateExpiry, help: "Seconds until the app's APNs push certificate expires.",
                       labels: ["app": app]).set(Int(seconds))
    }

    /// An app that no longer has a push certificate (removed, or moved to a key): its expiry
    /// gauge goes, so an alert on it does not fire for a certificate nobody uses.
    package func forgetCertificateExpiry(app: String) {
        registry.remove(Self.certificateExpiry, labels: ["app": app])
    }

    private static let certificateExpiry = "relay_apns_certificate_expiry_seconds"

    /// Every answer the relay gives, by route (`push`, `relay-to`, `health`, `ready`, `metrics`,
    /// `root`, `unknown`, and `app` for a push to an app `APPS_FILE` does not name) and status.
    package func countRequest(route: String, status: Int) {
        if status == 201 && route == "push" {
            return hotCounter(\.pushesCreated) { Self.requestCounter($0, route: route, status: status) }.increment()
        }
        if status == 201 && route == "relay-to" {
            return hotCounter(\.relayToCreated) { Self.requestCounter($0, route: route, status: status) }.increment()
        }
        Self.requestCounter(registry, route: route, status: status).increment()
    }

    /// The cached hot series, made through the registry on first use.
    private func hotCounter(_ slot: WritableKeyPath<HotSeries, Counter?>,
                            make: (MetricsRegistry) -> Counter) -> Counter {
        hot.withLock { hot in
            if let counter = hot[keyPath: slot] { return counter }
            let counter = make(registry)
            hot[keyPath: slot] = counter
            return counter
        }
    }

    private static func requestCounter(_ registry: MetricsRegistry, route: String, status: Int) -> Counter {
        registry.counter("relay_http_requests_total", help: "HTTP requests answered, by route and status.",
                         labels: ["route": route, "status": String(status)])
    }

    /// Apple's answers, by status and reason (`none` when Apple gave none, e.g. on success);
    /// a failure without an answer counts under status `none` and the error code.
    package func countAPNsAnswer(status: String, reason: String) {
        if status == "200" && reason == "none" {
            return hotCounter(\.apnsAccepted) { Self.apnsCounter($0, status: status, reason: reason) }.increment()
        }
        Self.apnsCounter(registry, status: status, reason: reason).increment()
    }

    private static func apnsCounter(_ registry: MetricsRegistry, status: String, reason: String) -> Counter {
        registry.counter("relay_apns_responses_total", help: "APNs outcomes, by status and reason.",
                         labels: ["status": status, "reason": reason])
    }

    /// A push that failed because of our configuration (502): the alert to page on.
    package func countMisconfiguration(reason: String) {
        registry.counter("relay_misconfiguration_total", help: "Pushes refused because of the relay's own configuration (502).",
                         labels: ["reason": reason]).increment()
    }

    /// A push to `/{name}/…` for an app the relay does not serve (502). Apart from
    /// `relay_misconfiguration_total` because anyone can send one: a request alone must not page
    /// the on-call. No label: the name comes from the request, and an outsider must not grow the
    /// series.
    package let unknownAppPushes: Counter
    /// Holding what Apple could not take.
    package let hold: HoldMetrics
    /// The store of held pushes: up, its calls' durations, its errors.
    package let store: StoreMetrics
}

/// The client reports connection events from its loops; the relay turns them into metrics
/// (cheap atomic increments, as the observer contract asks).
extension RelayMetrics: APNsClientObserver {
    package func connectionOpened(environment: APNsEnvironment, connection: Int) { apnsConnections.increment() }
    package func connectionClosed(environment: APNsEnvironment, connection: Int, error: String?) { apnsConnections.decrement() }
    /// By reason (`first_use`, `age`, `expired`, `key_rotation`): rare, so looked up each time.
    package func providerTokenSigned(environment: APNsEnvironment, reason: ProviderTokenSigning) {
        registry.counter("relay_apns_provider_tokens_signed_total",
                         help: "Provider tokens signed (one token is shared by every APNs connection), by reason.",
                         labels: ["reason": reason.rawValue]).increment()
    }
    package func reconnecting(environment: APNsEnvironment, connection: Int) { reconnects.increment() }
    package func pushRetried(environment: APNsEnvironment) { pushRetries.increment() }
    package func pushCrossedLoops(environment: APNsEnvironment) { crossLoopPushes.increment() }
}
