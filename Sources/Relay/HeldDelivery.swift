import Dispatch
import Synchronization
import APNs
import Basics
import Observability
import PushStore

/// Sends held pushes to Apple once it answers again: oldest first, at most `inFlight` at once
/// (live pushes keep the rest of the pool), each as it would have gone when it arrived (its own
/// `apns-id`, `apns-expiration` = arrival + TTL). A push leaves the store only once Apple has
/// accepted it or refused it for good; any other outcome keeps it (`HoldPolicy.retry`).
///
/// While Apple is out of reach, or refuses pushes for now, it sends one push at a time, the
/// oldest, once a second: a probe (which the client fails at once while it has no connection),
/// not a flood. Everything runs on
/// one serial queue; the store and the client answer on their own threads and hop onto it.
final class HeldDelivery: @unchecked Sendable {
    // @unchecked: every mutable field below is touched on `queue` only.
    private let queue = DispatchQueue(label: "held-delivery")
    private let owner: HeldStoreOwner
    private let senders: @Sendable (String) -> (any APNsSending)?
    private let metrics: HoldMetrics
    private let logger: Logger
    private let inFlightLimit: Int
    private let leaseMs: Int64
    private let now: @Sendable () -> WallTime

    private var inFlight = 0
    private var taking = false
    /// Apple was out of reach at the last try: one push at a time, each tick.
    private var probing = false
    private var wakeScheduled = false
    private var stopped = false
    private var lastSweep: ContinuousClock.Instant?
    /// The last take failed: the next failure is not logged again (Redis down would write a
    /// line a tick), the next success says the store reads again.
    private var readFailing = false
    /// What the store held at its last count, for `/health` and the gauges: read from event
    /// loops, which must not wait behind the queue.
    private let lastCounts = Mutex(HeldCounts(entries: 0, bytes: 0, oldestArrivalMs: nil, leased: 0))
    /// A `wake` is queued and has not run yet: every push held during an outage wakes the
    /// delivery, and one queued wake serves them all.
    private let wakeQueued = Atomic(false)

    /// How often, while the store holds any push, expired ones are dropped, the store is
    /// counted, and (while Apple is out of reach) the oldest is tried.
    static let tick: Duration = .seconds(1)

    init(owner: HeldStoreOwner, inFlight: Int, pushTimeout: Duration, metrics: HoldMetrics, logger: Logger,
         now: @escaping @Sendable () -> WallTime, senders: @escaping @Sendable (String) -> (any APNsSending)?) {
        self.owner = owner
        self.inFlightLimit = inFlight
        // Longer than any send can take (the client ends every push by its deadline): a lease
        // runs out for a push kept for `later` (or whose answer was lost), which is then due again.
        self.leaseMs = Int64((pushTimeout / .milliseconds(1)).rounded()) + 60_000
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.senders = senders
    }

    /// Something may be held now (a push was just held, or the relay started on a store that
    /// holds pushes): deliver it when Apple takes it.
    func wake() {
        guard !wakeQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async {
            self.wakeQueued.store(false, ordering: .releasing)
            self.pump()
        }
    }

    /// Takes no more pushes; those in flight end by their deadline and go back to the store if
    /// Apple did not answer them.
    func stop() { queue.sync { stopped = true } }

    /// What the store held at its last count (taken at most a tick ago while it holds any).
    var counts: HeldCounts { lastCounts.withLock { $0 } }

    private var nowMs: Int64 { now().nanosecondsSince1970 / 1_000_000 }

    private func pump() {
        guard !stopped, !taking, let store = owner.openStore else { return }
        sweepIfDue(store)
        let room = probing ? (inFlight == 0 && !wakeScheduled ? 1 : 0) : inFlightLimit - inFlight
        guard room > 0 else { return }
        taking = true
        store.take(max: room, nowMs: nowMs, leaseMs: leaseMs) { result in
            self.queue.async { self.took(result, from: store) }
        }
    }

    private func took(_ result: Result<[StoredPush], PushStoreError>, from store: any HeldPushStore) {
        taking = false
        switch result {
        case .failure(let error):
            if !readFailing {
                logger.error("held pushes cannot be read from the store", ["store": .string(owner.label), "error": .string(error.message)])
            }
            readFailing = true
            backOff()
        case .success(let pushes):
            if readFailing {
                readFailing = false
                logger.notice("held pushes can be read from the store again", ["store": .string(owner.label)])
            }
            if pushes.isEmpty {
                // Nothing due: the store is empty, or all it holds is in flight. Count it, so
                // the gauges reach zero once it drains.
                if inFlight == 0 { sweep(store) }
                return
            }
            for stored in pushes { send(stored, store: store) }
            if !probing { pump() }
        }
    }

    private func send(_ stored: StoredPush, store: any HeldPushStore) {
        let push = stored.push
        guard let sender = senders(push.app) else {
            // Its app left APPS_FILE: nothing can send it, and kept it would stand first in
            // line until it expired.
            settle(stored, store: store, delivered: false,
                   why: "its app \(push.app.isEmpty ? "(default)" : push.app) is no longer served")
            return
        }
        let notification: APNsNotification
        do {
            notification = try APNsNotification(
                token: try DeviceToken(push.deviceToken), topic: push.topic, payload: APNsPayload(builtAlert: push.payload),
                pushType: APNsPushType(rawValue: push.pushType) ?? .alert, priority: push.priority,
                expiration: Int(clamping: push.apnsExpiration), collapseID: push.collapseID, apnsID: APNsID(push.apnsID))
        } catch {
            settle(stored, store: store, delivered: false, why: "it cannot be sent: \(error.message)")
            return
        }
        inFlight += 1
        sender.send(notification, environment: push.environment == "sandbox" ? .sandbox : .production) { result in
            self.queue.async { self.answered(stored, result, store: store) }
        }
    }

    private func answered(_ stored: StoredPush, _ result: Result<APNsResponse, APNsError>, store: any HeldPushStore) {
        inFlight -= 1
        let retry = HoldPolicy.retry(after: result)
        switch retry {
        case .delivered, .refused:
            probing = false
            let why: String? = if case .success(let response) = result, !response.ok {
                "APNs answered \(response.status) \(response.reason?.rawValue ?? "")"
            } else { nil }
            settle(stored, store: store, delivered: retry == .delivered, why: why)
            pump()
        case .unanswered:
            // Kept leased: Apple may have it. Apple took it, so it is there: the others go on.
            probing = false
            pump()
        case .later, .back:
            // `later` keeps its lease, so the next try takes the push behind it: put back first
            // in line, a push Apple refuses for now would stand before every other at each try.
            if retry == .back { store.release([stored.id]) { _ in } }
            if !probing {
                let why = switch result {
                case .success(let response): "APNs answered \(response.status) \(response.reason?.rawValue ?? "")"
                case .failure(let error): HoldPolicy.reason(for: result) ?? error.message
                }
                logger.warning("held pushes wait: APNs cannot take them now", ["reason": .string(why)])
            }
            backOff()
        }
    }

    /// Removes a push Apple answered (or that can never be sent) from the store, and says so.
    private func settle(_ stored: StoredPush, store: any HeldPushStore, delivered: Bool, why: String?) {
        store.finish([stored.id]) { _ in }
        let push = stored.push
        var fields: [String: LogValue] = [
            "apns.id": .string(push.apnsID), "route": .string(push.route),
            "held_ms": .int(Int(max(0, nowMs - push.arrivalMs))),
        ]
        if !push.app.isEmpty { fields["app"] = .string(push.app) }
        if let token = try? DeviceToken(push.deviceToken) { fields["device"] = .string(token.fingerprint) }
        if delivered {
            metrics.delivered.increment()
            logger.info("held push delivered", fields)
        } else {
            metrics.refused.increment()
            fields["reason"] = .string(why ?? "")
            logger.warning("held push dropped", fields)
        }
    }

    private func backOff() {
        probing = true
        wakeAfterTick()
    }

    private func wakeAfterTick() {
        guard !wakeScheduled, !stopped else { return }
        wakeScheduled = true
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(Self.tick / .milliseconds(1)))) {
            self.wakeScheduled = false
            self.pump()
        }
    }

    private func sweepIfDue(_ store: any HeldPushStore) {
        let instant = ContinuousClock.now
        if let last = lastSweep, instant - last < Self.tick { return }
        sweep(store)
    }

    /// Drops what expired and counts what is left; while anything is held, comes back in a
    /// tick to do it again and to deliver what is due.
    private func sweep(_ store: any HeldPushStore) {
        lastSweep = ContinuousClock.now
        store.dropExpired(nowMs: nowMs) { result in
            if case .success(let count) = result, count > 0 {
                self.metrics.expired.increment(by: count)
                self.logger.notice("held pushes expired, never sent", ["count": .int(count)])
            }
        }
        store.counts { result in
            guard case .success(let counts) = result else { return }
            self.lastCounts.withLock { $0 = counts }
            if counts.entries > 0 { self.queue.async { self.wakeAfterTick() } }
        }
    }
}
