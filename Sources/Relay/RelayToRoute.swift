import APNs

/// Where one push goes, read from `POST /relay-to/{production|development}/{device_token}[/{extra}…]`:
/// the URL of toot-relay and webpush-apn-relay, which Toot!, the official Mastodon app and its
/// forks register. Serving it lets those apps move here with nothing changed in the app.
package struct RelayToRoute: Sendable, Equatable {
    /// The token exactly as sent (case kept), as on `/push`.
    package var deviceToken: String
    /// `development` selects Apple's development host, `production` the production host.
    package var sandbox: Bool
    /// Everything after the token, percent-decoded as one string (`a/b/c`), echoed to the
    /// device as `"x"`; nil when the path ends at the token.
    package var extra: String?
    /// The token as APNs takes it, checked once by `match` (see `PushRoute.device`).
    package var device: DeviceToken?

    package init(deviceToken: String, sandbox: Bool, extra: String? = nil) {
        self.init(deviceToken: deviceToken, device: try? DeviceToken(deviceToken), sandbox: sandbox, extra: extra)
    }

    init(deviceToken: String, device: DeviceToken?, sandbox: Bool, extra: String?) {
        self.deviceToken = deviceToken
        self.device = device
        self.sandbox = sandbox
        self.extra = extra
    }

    /// Every path of this route starts with it.
    package static let prefix = "/relay-to/"

    /// Matches `/relay-to/{environment}/{token}[/{extra}…]`; a query is ignored, as those relays do.
    ///
    /// A missing or empty token, or an environment other than `production` and `development`,
    /// is `.notFound` (404): the URL can never work. A token that breaks `/push`'s rules, or an
    /// extra path that does not percent-decode to UTF-8 or is over `PushRoute.maxIDBytes`, is
    /// `.badRequest`. A lone trailing slash after the token is no extra path; past that the
    /// extra is taken as written (empty segments and a trailing slash kept), as those relays
    /// pass it on.
    package static func match(path: String) -> RouteMatch {
        guard path.utf8.starts(with: prefix.utf8) else { return .notFound }
        let rest = path.utf8.dropFirst(prefix.utf8.count)
        let parts = rest.split(separator: UInt8(ascii: "/"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, !parts[1].isEmpty else { return .notFound }

        let sandbox: Bool
        if parts[0].elementsEqual("production".utf8) {
            sandbox = false
        } else if parts[0].elementsEqual("development".utf8) {
            sandbox = true
        } else {
            return .notFound
        }

        let token = String(decoding: parts[1], as: UTF8.self)
        let device: DeviceToken
        switch PushRoute.checkedToken(token) {
        case .success(let checked): device = checked
        case .failure(let refusal): return .badRequest(reason: refusal.reason)
        }

        var extra: String?
        if parts.count == 3, !parts[2].isEmpty {
            switch PushRoute.decodedPathText(parts[2], what: "extra path") {
            case .success(let text): extra = text
            case .failure(let refusal): return .badRequest(reason: refusal.reason)
            }
        }
        return .relayTo(RelayToRoute(deviceToken: token, device: device, sandbox: sandbox, extra: extra))
    }
}
