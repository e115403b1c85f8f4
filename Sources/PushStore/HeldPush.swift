/// One push the relay holds because Apple could not take it: everything needed to send it later
/// exactly as it would have gone when it arrived.
package struct HeldPush: Sendable, Equatable {
    /// The inbound route it came by (the relay's own name for it), so delivery rebuilds the same request.
    package var route: String
    /// The APNs environment it goes to: `production` or `sandbox`.
    package var environment: String
    /// The app (APPS_FILE name, or the default app's) whose credentials send it.
    package var app: String
    /// The device token, as hex text.
    package var deviceToken: String
    /// `apns-topic`.
    package var topic: String
    /// `apns-id`, chosen when the push was held: every delivery attempt of it carries the same one.
    package var apnsID: String
    /// `apns-priority` (10 or 5).
    package var priority: Int
    /// `apns-collapse-id`, when the sender gave a usable `Topic`.
    package var collapseID: String?
    /// `apns-push-type`.
    package var pushType: String
    /// The sender's `Urgency`, as sent.
    package var urgency: String
    /// When the relay received it: Unix time in milliseconds.
    package var arrivalMs: Int64
    /// The sender's `TTL` in seconds. A held push always has one above zero (TTL 0 is never held).
    package var ttlSeconds: Int64
    /// The APNs payload, as it would have been sent.
    package var payload: [UInt8]

    package init(route: String, environment: String, app: String, deviceToken: String, topic: String, apnsID: String, priority: Int,
                 collapseID: String?, pushType: String, urgency: String, arrivalMs: Int64, ttlSeconds: Int64,
                 payload: [UInt8]) {
        self.route = route
        self.environment = environment
        self.app = app
        self.deviceToken = deviceToken
        self.topic = topic
        self.apnsID = apnsID
        self.priority = priority
        self.collapseID = collapseID
        self.pushType = pushType
        self.urgency = urgency
        self.arrivalMs = arrivalMs
        self.ttlSeconds = ttlSeconds
        self.payload = payload
    }

    /// When it stops being worth sending: arrival + TTL, in Unix milliseconds (saturating).
    package var expiresAtMs: Int64 {
        let (ttlMs, overflowMs) = max(ttlSeconds, 0).multipliedReportingOverflow(by: 1000)
        let (sum, overflowSum) = arrivalMs.addingReportingOverflow(ttlMs)
        return overflowMs || overflowSum ? .max : sum
    }

    /// `apns-expiration` for a delivery: arrival + TTL in Unix seconds, as if sent when it arrived.
    package var apnsExpiration: Int64 { expiresAtMs == .max ? .max : expiresAtMs / 1000 }

    /// What this push counts for against the store's byte cap: its payload and its text fields.
    package var storedBytes: Int {
        payload.count + route.utf8.count + environment.utf8.count + app.utf8.count + deviceToken.utf8.count + topic.utf8.count
            + apnsID.utf8.count + (collapseID?.utf8.count ?? 0) + pushType.utf8.count + urgency.utf8.count
    }
}

/// A held push's identity in its store, ordered as the store keeps them (oldest first). Two
/// numbers so both engines fit: SQLite's rowid is `(0, rowid)`; a Redis stream id `ms-seq` is
/// `(ms, seq)`. Never reused by a store, so a late `finish` cannot delete a newer push.
package struct HeldPushID: Hashable, Comparable, Sendable, CustomStringConvertible {
    package let high: UInt64
    package let low: UInt64

    package init(high: UInt64 = 0, low: UInt64) {
        self.high = high
        self.low = low
    }

    package static func < (lhs: Self, rhs: Self) -> Bool { (lhs.high, lhs.low) < (rhs.high, rhs.low) }
    package var description: String { "\(high)-\(low)" }
}

/// A push as a store hands it out: its id (to finish or release it) and the push.
package struct StoredPush: Sendable, Equatable {
    package let id: HeldPushID
    package let push: HeldPush

    package init(id: HeldPushID, push: HeldPush) {
        self.id = id
        self.push = push
    }
}

/// What a store holds at most. A put that would go over `maxEntries` or `maxBytes` is refused
/// (`PushStoreError.Code.capReached`); a device over `maxPerDevice` loses its oldest pushes,
/// but never one taken for delivery and not yet finished or released.
package struct HoldLimits: Sendable, Equatable {
    package var maxEntries: Int
    package var maxBytes: Int
    package var maxPerDevice: Int

    package init(maxEntries: Int, maxBytes: Int, maxPerDevice: Int) {
        self.maxEntries = maxEntries
        self.maxBytes = maxBytes
        self.maxPerDevice = maxPerDevice
    }
}

/// A put's outcome once committed: the ids, in the order of the pushes put, and how many older
/// pushes of the same devices were dropped to keep each under `maxPerDevice`.
package struct PutReceipt: Sendable, Equatable {
    package let ids: [HeldPushID]
    package let droppedForDeviceCap: Int

    package init(ids: [HeldPushID], droppedForDeviceCap: Int) {
        self.ids = ids
        self.droppedForDeviceCap = droppedForDeviceCap
    }
}

/// What a store holds now.
package struct HeldCounts: Sendable, Equatable {
    /// Pushes held, taken ones included.
    package let entries: Int
    /// Their `storedBytes`, summed.
    package let bytes: Int
    /// The arrival of the oldest push held (by id), nil when none is.
    package let oldestArrivalMs: Int64?
    /// Pushes taken and neither finished nor released (one whose lease ran out counts until the
    /// next take notices).
    package let leased: Int

    package init(entries: Int, bytes: Int, oldestArrivalMs: Int64?, leased: Int) {
        self.entries = entries
        self.bytes = bytes
        self.oldestArrivalMs = oldestArrivalMs
        self.leased = leased
    }
}
