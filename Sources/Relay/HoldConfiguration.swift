import PushStore

/// Where and how much the relay holds of what Apple could not take (`STORE_PATH` or `STORE_URL`,
/// and the `HOLD_*` settings).
package struct HoldConfiguration: Sendable, Equatable {
    /// The store's file, or why there is none.
    package enum Store: Sendable, Equatable {
        /// Holding is off: pushes Apple cannot take are answered 503/504.
        case off(why: String)
        /// The SQLite file. `chosenBy` decides what an unusable file does at start-up.
        case file(path: String, chosenBy: Chooser)
        /// Redis (`STORE_URL`): shared by every relay that names it.
        case redis(RedisAddress)

        /// What logs and `/health` show: `sqlite:/path`, `redis://host:port/db` (never the
        /// password), `off`.
        package var label: String {
            switch self {
            case .off: "off"
            case .file(let path, _): "sqlite:" + path
            case .redis(let address): address.description
            }
        }
    }

    /// Who chose the store's path.
    package enum Chooser: Sendable, Equatable {
        /// `STORE_PATH`: a file that cannot be opened stops start-up.
        case operatorSetting
        /// Unset: a default path that is not writable (a bare binary run as a user) turns
        /// holding off with one warning.
        case defaultPath
    }

    package var store: Store
    package var limits: HoldLimits
    /// Held pushes in flight to Apple at once while the store drains, so live pushes keep the
    /// rest of the pool.
    package var deliveryInFlight: Int

    package init(store: Store, limits: HoldLimits = Defaults.limits, deliveryInFlight: Int = Defaults.deliveryInFlight) {
        self.store = store
        self.limits = limits
        self.deliveryInFlight = deliveryInFlight
    }

    /// Off, for configurations built in code (tests, tools) that do not ask for a store.
    package static let off = HoldConfiguration(store: .off(why: "not configured"))

    package enum Defaults {
        package static let path = "/var/lib/apns-relay/held.sqlite"
        /// A day's outage of a mid-size instance's app: 1,000,000 pushes of about 1.5 KiB fit in 2 GiB.
        package static let limits = HoldLimits(maxEntries: 1_000_000, maxBytes: 2 << 30, maxPerDevice: 100)
        package static let deliveryInFlight = 64
        /// How long a push without a `TTL` header is held: RFC 8030 makes the header mandatory,
        /// Mastodon sends 2 days; a day bounds what a sender that forgot it leaves behind.
        package static let ttlWhenUnset: Int64 = 86_400
    }
}
