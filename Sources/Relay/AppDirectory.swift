import Synchronization
import APNs

/// The apps of `APPS_FILE` as the responder meets them: a name, what a push needs from its
/// settings, and the APNs client that sends for it. Replaced whole on SIGHUP; a push reads it
/// once, so it sees the old table or the new one, never half of each.
package final class AppDirectory: Sendable {
    /// One app as a push needs it. A class, so a push holds it with one reference, not a copy of
    /// its strings.
    package final class App: Sendable {
        /// nil for the default app, whose pushes' lines and metrics carry no `app`.
        package let name: String?
        package let settings: RelayResponder.Settings
        package let sender: any APNsSending

        package init(name: String?, settings: RelayResponder.Settings, sender: any APNsSending) {
            self.name = name
            self.settings = settings
            self.sender = sender
        }
    }

    private struct Table {
        /// False without `APPS_FILE`, for the 502's reason.
        var configured = false
        var apps: [String: App] = [:]
    }

    private let table = Mutex(Table())

    package init() {}

    /// What a push to `/{name}/…` finds: the app, or why there is none.
    package enum Lookup {
        case app(App)
        /// `APPS_FILE` is set and names no such app: the relay is misconfigured (502), the
        /// subscription is not dead.
        case unknown
        /// No `APPS_FILE` (a push there is still the relay's misconfiguration, 502: the file may
        /// have been dropped by mistake).
        case notConfigured
    }

    package func lookup(_ name: some StringProtocol) -> Lookup {
        table.withLock { table in
            guard table.configured else { return .notConfigured }
            guard let app = table.apps[String(name)] else { return .unknown }
            return .app(app)
        }
    }

    /// Serves `apps` from now on; `configured`: whether `APPS_FILE` is set, for the 502's reason.
    package func replace(with apps: [App], configured: Bool) {
        var byName: [String: App] = [:]
        for app in apps { if let name = app.name { byName[name] = app } }
        table.withLock { $0 = Table(configured: configured, apps: byName) }
    }

    /// The names served now, for the start-up line.
    package var names: [String] { table.withLock { $0.apps.keys.sorted() } }
}
