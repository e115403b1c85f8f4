#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import APNs
import Basics
import HTTPServer
import Observability
import OpenSSLSupport
import PushStore
import WebPush

/// The relay's HTTP side: routing, WebPush → APNs, and the status the sender hears.
///
/// The server knows nothing but `respond(to:)`; every route lives here so it is tested with
/// plain `HTTPRequest` values and a fake `APNsSending`, without sockets.
package final class RelayResponder: HTTPResponder {
    /// What a push needs from the configuration; a subset so tests need no key or hosts.
    package struct Settings: Sendable {
        /// The app's bundle id, sent as `apns-topic` for `/push`.
        package var topic: String
        /// The alert's `loc-key`: what the app shows when it cannot decrypt.
        package var alertLocKey: String
        /// Bodies over this answer 413 (the server refuses a larger Content-Length before reading).
        package var maxBodyBytes: Int
        /// The `apns-topic` of `/relay-to` pushes: `topic` unless the operator serves another app there.
        package var relayToTopic: String
        /// The alert text of `/relay-to` pushes.
        package var relayToAlert: String

        /// - Parameter relayToTopic: nil means `topic`, as when `RELAY_TO_TOPIC` is unset.
        package init(topic: String, alertLocKey: String = PayloadMapper.defaultAlertLocKey,
                    maxBodyBytes: Int = WebPushParser.defaultMaxBodyBytes, relayToTopic: String? = nil,
                    relayToAlert: String = PayloadMapper.defaultRelayToAlert) {
            self.topic = topic
            self.alertLocKey = alertLocKey
            self.maxBodyBytes = maxBodyBytes
            self.relayToTopic = relayToTopic ?? topic
            self.relayToAlert = relayToAlert
        }

        package init(_ configuration: RelayConfiguration) {
            self.init(topic: configuration.topic, alertLocKey: configuration.alertLocKey,
                      maxBodyBytes: configuration.maxBodyBytes, relayToTopic: configuration.relayToTopic,
                      relayToAlert: configuration.relayToAlert)
        }
    }

    /// Answers nil when the relay can push (key parsed, a production connection usable), else
    /// one line saying why not; `/ready` turns it into 200 or 503.
    package typealias ReadinessCheck = @Sendable () -> String?

    package let settings: Settings
    package let metrics: RelayMetrics
    /// The default app: `settings` and the sender given, at the unprefixed routes.
    private let defaultApp: AppDirectory.App
    /// The apps of `APPS_FILE`, at `/{name}/push/…` and `/{name}/relay-to/…`.
    package let apps: AppDirectory
    private let logger: Logger
    private let readiness: ReadinessCheck
    private let now: @Sendable () -> WallTime
    /// Run before each `/metrics` render, to copy live values (open connections) into gauges;
    /// set after start-up because the server exists only once it has its responder.
    private let scrapeHooks = Mutex<[@Sendable () -> Void]>([])
    /// Whether pushes Apple could not take are held, set once at start-up (`holdWith`).
    private let holdState = Mutex<HoldState>(.off(why: "not configured"))

    /// Holding on (its store and delivery) or off (and why, for `/health`).
    package enum HoldState: Sendable {
        case on(Holding)
        case off(why: String)
    }

    /// - Parameters:
    ///   - now: the wall clock, injectable so `apns-expiration` and 410 timestamps are exact in tests.
    package init(settings: Settings, sender: any APNsSending, apps: AppDirectory = AppDirectory(), logger: Logger,
                metrics: RelayMetrics = RelayMetrics(), readiness: @escaping ReadinessCheck = { nil },
                now: @escaping @Sendable () -> WallTime = { .now }) {
        self.settings = settings
        self.defaultApp = AppDirectory.App(name: nil, settings: settings, sender: sender)
        self.apps = apps
        self.logger = logger
        self.metrics = metrics
        self.readiness = readiness
        self.now = now
    }

    /// From now on, pushes Apple could not take are held (or, off, answered 503/504 as before).
    package func holdWith(_ state: HoldState) {
        holdState.withLock { $0 = state }
    }

    private var holding: Holding? {
        holdState.withLock { state in
            if case .on(let holding) = state { return holding }
            return nil
        }
    }

    /// The sender of a held push's app: "" is the default app; nil when no app of that name is served.
    package func sender(forHeldApp name: String) -> (any APNsSending)? {
        if name.isEmpty { return defaultApp.sender }
        if case .app(let app) = apps.lookup(name) { return app.sender }
        return nil
    }

    /// Adds work to run before each `/metrics` render (e.g. copy the server's open-connection count).
    package func onScrape(_ hook: @escaping @Sendable () -> Void) {
        scrapeHooks.withLock { $0.append(hook) }
    }

    package func respond(to request: HTTPRequest) async -> HTTPResponse {
        await withCheckedContinuation { continuation in
            respond(to: request) { continuation.resume(returning: $0) }
        }
    }

    /// The server's hot path: everything before Apple's answer runs here on the caller's (event
    /// loop) thread and is pure CPU; the APNs client sends on that loop's own connection when it
    /// has room, so the answer arrives on the same loop (on another loop's only when this one's
    /// cannot take the push). No Task and no hop through the cooperative pool, which cost
    /// several thread wake-ups per push.
    package func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void) {
        switch route(request) {
        case .answer(let route, let response):
            metrics.countRequest(route: route, status: response.status)
            completion(response)
        case .push(let target, let app):
            // The push counts its own answer (`deliver`): no closure wrapped around `completion`
            // per layer, each an allocation per push.
            push(request, target: target, app: app, completion: completion)
        }
    }

    // MARK: Routing

    /// What routing decided: an answer now (with the route's label), or a push to relay.
    private enum Routed {
        case answer(String, HTTPResponse)
        /// A push for the default app or an app of `APPS_FILE`.
        case push(PushTarget, AppDirectory.App)
    }

    private func route(_ request: HTTPRequest) -> Routed {
        func done(_ route: String, _ response: HTTPResponse) -> Routed { .answer(route, response) }
        switch request.path {
        case "/":
            // metatext-apns's health check, kept so existing probes keep working.
            return done("root", get(request) { HTTPResponse(status: 200, text: "apns-relay\n") })
        case "/health", "/relay-to/_health":
            // The second is webpush-apn-relay's (2026), where its probes point.
            return done("health", get(request) { self.health() })
        case "/ready":
            return done("ready", get(request) { self.ready() })
        case "/metrics":
            return done("metrics", get(request) { self.metricsPage() })
        default:
            break
        }
        var path = request.path
        var app = defaultApp
        if !PushRoute.hasBytePrefix(path, PushRoute.prefix), !PushRoute.hasBytePrefix(path, RelayToRoute.prefix),
           let (name, rest) = Self.appPrefix(path) {
            let lookup = apps.lookup(name)
            if case .app(let found) = lookup {
                app = found
                path = rest
            } else if Self.isPush(rest, query: request.query) {
                // A subscription made with an app that is gone (dropped from APPS_FILE, or the file
                // unset by mistake): the relay's fault, never a 4xx that would unsubscribe its users.
                if let refused = Self.refusal(request.method, allow: Self.pushMethods) { return done("app", refused) }
                var missing = "(APPS_FILE is not set)"
                if case .unknown = lookup { missing = "in APPS_FILE" }
                let reason = "The relay is misconfigured: no app named \(quoted(String(name))) \(missing), so its pushes cannot be sent"
                metrics.unknownAppPushes.increment()
                return done("app", refusedPush(request, route: "app", status: 502, reason: reason, app: String(name)))
            }
        }
        let relayTo = PushRoute.hasBytePrefix(path, RelayToRoute.prefix)
        let match = relayTo ? RelayToRoute.match(path: path) : PushRoute.match(path: path, query: request.query)
        let label = relayTo ? PushTarget.relayToLabel : PushTarget.pushLabel
        let target: PushTarget
        switch match {
        case .notFound:
            return done("unknown", Self.error(404, "no route for \(Self.printable(request.path)); push to POST /push/{device_token}/{id} or POST /relay-to/{production|development}/{device_token}[/extra]"))
        case .badRequest(let reason):
            if let refused = Self.refusal(request.method, allow: Self.pushMethods) { return done(label, refused) }
            // Counted per app for the apps the file names only: a name from the path is the sender's.
            if let name = app.name { metrics.countAppRequest(app: name, route: label, status: 400) }
            return done(label, refusedPush(request, route: label, status: 400, reason: reason, app: app.name))
        case .push(let push): target = .push(push)
        case .relayTo(let route): target = .relayTo(route)
        }
        if let refused = Self.refusal(request.method, allow: Self.pushMethods) { return done(label, refused) }
        return .push(target, app)
    }

    /// Whether `path` is a whole push route (a token of the right form, an id): what a
    /// subscription's URL holds, unlike a scanner's guess.
    static func isPush(_ path: String, query: String?) -> Bool {
        switch PushRoute.hasBytePrefix(path, RelayToRoute.prefix) ? RelayToRoute.match(path: path) : PushRoute.match(path: path, query: query) {
        case .push, .relayTo: true
        case .notFound, .badRequest: false
        }
    }

    /// `/{name}/push/…` or `/{name}/relay-to/…`: the app's name and the path after it.
    static func appPrefix(_ path: String) -> (name: Substring, rest: String)? {
        let utf8 = path.utf8
        guard utf8.first == UInt8(ascii: "/"), let slash = utf8.dropFirst().firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let name = path[path.index(after: path.startIndex)..<slash]
        let rest = String(path[slash...])
        guard !name.isEmpty, PushRoute.hasBytePrefix(rest, PushRoute.prefix) || PushRoute.hasBytePrefix(rest, RelayToRoute.prefix) else { return nil }
        return (name, rest)
    }

    /// What the two push routes differ in: the app family's payload, its topic, the label.
    /// Everything else (headers, token rules, the APNs round trip, the status) is one path.
    private enum PushTarget {
        /// metatext-apns's route, for Metatext, Feditext and their kin.
        case push(PushRoute)
        /// toot-relay's and webpush-apn-relay's route, for Toot!, the official Mastodon app and its forks.
        case relayTo(RelayToRoute)

        static let pushLabel = "push"
        static let relayToLabel = "relay-to"

        /// The `route` of metrics and logs.
        var label: String {
            switch self {
            case .push: Self.pushLabel
            case .relayTo: Self.relayToLabel
            }
        }

        var deviceToken: String {
            switch self {
            case .push(let route): route.deviceToken
            case .relayTo(let route): route.deviceToken
            }
        }

        /// The token as the route checked it, so the push does not check it again.
        var device: DeviceToken? {
            switch self {
            case .push(let route): route.device
            case .relayTo(let route): route.device
            }
        }

        var sandbox: Bool {
            switch self {
            case .push(let route): route.sandbox
            case .relayTo(let route): route.sandbox
            }
        }
    }

    /// What the push route takes besides OPTIONS.
    static let pushMethods = ["POST"]
    /// What the read-only routes take besides OPTIONS: RFC 9110 §9.3.2 wants HEAD wherever GET
    /// works, and uptime monitors probe with HEAD.
    static let readMethods = ["GET", "HEAD"]

    /// A HEAD runs the GET: the same status and headers (the server leaves the body out).
    private func get(_ request: HTTPRequest, _ body: () -> HTTPResponse) -> HTTPResponse {
        Self.refusal(request.method, allow: Self.readMethods) ?? body()
    }

    /// nil when `method` is one the route serves; otherwise the answer: 204 with `Allow` for
    /// OPTIONS, 405 with `Allow` for anything else.
    static func refusal(_ method: String, allow methods: [String]) -> HTTPResponse? {
        if methods.contains(method) { return nil }
        let allow = (methods + ["OPTIONS"]).joined(separator: ", ")
        if method == "OPTIONS" {
            var headers = HTTPHeaders()
            headers.add("Allow", allow)
            return HTTPResponse(status: 204, headers: headers)
        }
        return methodNotAllowed(method, allow: allow)
    }

    /// Alive, with what is held (or why nothing can be): an operator's first look in an outage.
    private func health() -> HTTPResponse {
        switch holdState.withLock({ $0 }) {
        case .on(let holding):
            return HTTPResponse(status: 200, json: #"{"status":"alive","held":"# + String(holding.counts.entries)
                + #","store":"# + JSONString.quoted(holding.storeLabel) + #","store_ok":"# + String(holding.storeAvailable) + "}")
        case .off(let why):
            return HTTPResponse(status: 200, json: #"{"status":"alive","hold":"# + JSONString.quoted("off: " + why)
                + #","store":"off","store_ok":false}"#)
        }
    }

    /// Ready when a production connection can take a push. The store's state is said
    /// (`store_ok`) but never makes the relay unready: with the store down, live pushes still go
    /// to Apple; only holding stops (503 for what Apple cannot take).
    private func ready() -> HTTPResponse {
        if let why = readiness() { return Self.error(503, why) }
        let storeOK = holding?.storeAvailable ?? false
        return HTTPResponse(status: 200, json: #"{"status":"ready","store_ok":"# + String(storeOK) + "}")
    }

    private func metricsPage() -> HTTPResponse {
        let hooks = scrapeHooks.withLock { $0 }
        for hook in hooks { hook() }
        var headers = HTTPHeaders()
        headers.add("Content-Type", MetricsRegistry.contentType)
        return HTTPResponse(status: 200, headers: headers, body: Array(metrics.registry.prometheusText().utf8))
    }

    // MARK: The push

    /// One push, from request to answer. Every path out of here writes exactly one log line
    /// and calls `completion` exactly once.
    private func push(_ request: HTTPRequest, target: PushTarget, app: AppDirectory.App,
                      completion: @escaping @Sendable (HTTPResponse) -> Void) {
        let started = ContinuousClock.now
        metrics.pushesInFlight.increment()
        let label = target.label
        let appName = app.name
        func reply(_ response: HTTPResponse) { deliver(response, route: label, app: appName, to: completion) }
        var log = PushLog(requestID: Self.requestID(request), route: target.label, sandbox: target.sandbox,
                          peer: request.forwardedFor ?? request.peerAddress, app: appName)

        let message: WebPushMessage
        do {
            message = try WebPushParser.parse(request, maxBodyBytes: app.settings.maxBodyBytes)
        } catch {
            return reply(finish(log, status: error.status, reason: error.reason, started: started))
        }
        let token: DeviceToken
        if let checked = target.device {
            token = checked
        } else {
            do {
                token = try DeviceToken(target.deviceToken)
            } catch {
                return reply(finish(log, status: 400, reason: error.message, started: started))
            }
        }
        log.device = token

        let arrival = now()
        let seconds = Int(arrival.unixSeconds)
        let plan: APNsPushPlan
        let topic: String
        switch target {
        case .push(let route):
            plan = PayloadMapper.plan(message: message, id: route.id, alertLocKey: app.settings.alertLocKey, now: seconds)
            topic = app.settings.topic
        case .relayTo(let route):
            plan = PayloadMapper.relayToPlan(message: message, extra: route.extra, alert: app.settings.relayToAlert, now: seconds)
            topic = app.settings.relayToTopic
        }
        if plan.degraded {
            metrics.degradedPayloads.increment()
            log.degraded = plan.degradedReason ?? "too big for Apple's payload limit"
        }
        let notification: APNsNotification
        do {
            notification = try APNsNotification(
                token: token, topic: topic, payload: APNsPayload(builtAlert: plan.payload), pushType: .alert,
                priority: plan.priority, expiration: plan.expiration, collapseID: plan.collapseID)
        } catch {
            // The request was fine; what we built from it was not (topic, loc-key, alert): our fault.
            let answer = RelayAnswer(status: 502, reason: "The relay is misconfigured: \(error.message)", misconfiguration: true)
            metrics.countMisconfiguration(reason: "InvalidNotification")
            return reply(finish(log, answer: answer, started: started))
        }
        log.apnsID = notification.apnsID

        let pending = log
        let ttl = message.ttl, urgency = message.urgency, sandbox = target.sandbox
        app.sender.send(notification, environment: sandbox ? .sandbox : .production) { result in
            // TTL 0 is "now or never" (RFC 8030): its answer stands.
            if ttl != 0, let why = HoldPolicy.reason(for: result), let holding = self.holding {
                let held = HeldPush(
                    route: label, environment: sandbox ? "sandbox" : "production", app: appName ?? "",
                    deviceToken: notification.token.hex, topic: notification.topic, apnsID: notification.apnsID,
                    priority: notification.priority, collapseID: notification.collapseID, pushType: notification.pushType.rawValue,
                    urgency: (urgency ?? .normal).rawValue, arrivalMs: arrival.nanosecondsSince1970 / 1_000_000,
                    ttlSeconds: ttl.map(Int64.init) ?? HoldConfiguration.Defaults.ttlWhenUnset,
                    payload: notification.payload)
                holding.hold(held) { outcome in
                    var log = pending
                    switch outcome {
                    case .success: log.held = why
                    case .failure(let error): log.holdFailed = error.message
                    }
                    self.deliver(self.answered(result, log: log, started: started), route: label, app: appName, to: completion)
                }
                return
            }
            self.deliver(self.answered(result, log: pending, started: started), route: label, app: appName, to: completion)
        }
    }

    /// A push's answer leaves: out of the in-flight gauge (what a drain waits for), counted, sent.
    private func deliver(_ response: HTTPResponse, route: String, app: String?, to completion: @Sendable (HTTPResponse) -> Void) {
        metrics.pushesInFlight.decrement()
        metrics.countRequest(route: route, status: response.status)
        if let app { metrics.countAppRequest(app: app, route: route, status: response.status) }
        completion(response)
    }

    /// Apple's answer (or why there was none) turned into the sender's answer, counted and logged.
    private func answered(_ result: Result<APNsResponse, APNsError>, log: PushLog,
                          started: ContinuousClock.Instant) -> HTTPResponse {
        // Apple's part of the line beside the log (which the completion holds), not in a changed
        // copy of it: the copy retained and released each of its strings.
        var apns = APNsOutcome()
        // A held push is ours now: 201, whatever Apple's trouble was (the line says it).
        let answer = log.held != nil
            ? RelayAnswer(status: 201)
            : StatusMapping.answer(for: result, nowMilliseconds: Int64((now().timeIntervalSince1970 * 1000).rounded()))
        switch result {
        case .success(let response):
            apns.status = response.status
            apns.reason = response.reason?.rawValue
            apns.uniqueID = response.uniqueID
            metrics.countAPNsAnswer(status: String(response.status), reason: response.reason?.rawValue ?? "none")
            if answer.misconfiguration { metrics.countMisconfiguration(reason: response.reason?.rawValue ?? "status \(response.status)") }
        case .failure(let error):
            apns.error = error.code.description
            metrics.countAPNsAnswer(status: "none", reason: error.code.description)
            if answer.misconfiguration { metrics.countMisconfiguration(reason: error.code.description) }
        }
        return finish(log, apns: apns, answer: answer, started: started)
    }

    /// A push refused before anything was parsed (a bad token, id or extra path in the path).
    private func refusedPush(_ request: HTTPRequest, route: String, status: Int, reason: String, app: String?) -> HTTPResponse {
        let log = PushLog(requestID: Self.requestID(request), route: route, sandbox: false,
                          peer: request.forwardedFor ?? request.peerAddress, app: app)
        return finish(log, status: status, reason: reason, started: ContinuousClock.now)
    }

    private func finish(_ log: PushLog, status: Int, reason: String, started: ContinuousClock.Instant) -> HTTPResponse {
        finish(log, answer: RelayAnswer(status: status, reason: reason), started: started)
    }

    /// Writes the push's log line, observes its latency and builds the HTTP answer.
    private func finish(_ log: PushLog, apns: APNsOutcome = APNsOutcome(), answer: RelayAnswer,
                        started: ContinuousClock.Instant) -> HTTPResponse {
        let elapsed = ContinuousClock.now - started
        metrics.pushDuration.observe(elapsed)
        var headers = HTTPHeaders()
        headers.reserveCapacity(4)  // one allocation for the answer's fields (and a JSON body's type), not one per field
        log.requestID.withText { headers.add("X-Request-ID", bytes: UnsafeRawBufferPointer($0)) }
        if let id = log.apnsID { headers.add("apns-id", id) }
        if let retryAfter = answer.retryAfter { headers.add("Retry-After", String(retryAfter)) }
        if log.held != nil { headers.add(Self.heldHeader, "true") }

        let level: LogLevel
        switch answer.status {
        case _ where log.held != nil: level = .warning
        case 201, 410: level = .info
        case 502: level = .error
        default: level = .warning
        }
        // The line's fields (and the token's SHA-256 fingerprint) only when the line is written: at
        // the default `info` every push is logged, at `warning` a delivered push writes nothing.
        if logger.isEnabled(level) { writeLog(log, apns: apns, answer: answer, level: level, elapsed: elapsed) }

        if answer.status == 201 { return HTTPResponse(status: 201, headers: headers) }
        return HTTPResponse(status: answer.status, json: answer.jsonBody, headers: headers)
    }

    private func writeLog(_ log: PushLog, apns: APNsOutcome, answer: RelayAnswer, level: LogLevel, elapsed: Duration) {
        // In key order, so the line is written as listed (no dictionary, no sort, and no list:
        // a JSON sink formats each field as it is added).
        let message = log.held != nil ? "push held" : answer.status == 201 ? "push delivered" : "push answered \(answer.status)"
        logger.log(level, message, inKeyOrder: { line in
                line.add(LineKey.environment, .string(log.sandbox ? "sandbox" : "production"))
            if let error = apns.error { line.add(LineKey.apnsError, .string(error)) }
            if let id = log.apnsID { line.add(LineKey.apnsID, .string(id)) }
            if let reason = apns.reason { line.add(LineKey.apnsReason, .string(reason)) }
            if let status = apns.status { line.add(LineKey.apnsStatus, .int(status)) }
            if let uniqueID = apns.uniqueID { line.add(LineKey.apnsUniqueID, .string(uniqueID)) }
            if let app = log.app { line.add(LineKey.app, .string(app)) }
            if let device = log.device {
                line.add(LineKey.device, .string(device.fingerprint(sha256FirstWord: SHA256Digest.firstWord(of:))))
            }
            if let why = log.held { line.add(LineKey.heldReason, .string(why)) }
            if let why = log.holdFailed { line.add(LineKey.holdFailed, .string(why)) }
            line.add(LineKey.httpStatus, .int(answer.status))
            line.add(LineKey.latency, .double((elapsed / .microseconds(1)).rounded() / 1000))
            if let why = log.degraded {
                line.add(LineKey.degraded, true)
                line.add(LineKey.degradedReason, .string(why))
            }
            if let peer = log.peer { line.add(LineKey.peer, .string(peer)) }
            if let reason = answer.reason, answer.status != 201 { line.add(LineKey.reason, .string(reason)) }
            log.requestID.withText { line.add(LineKey.requestID, text: $0) }
            line.add(LineKey.route, .string(log.route))
        })
    }

    /// The push line's keys, each spelled as JSON once (`LogKey`), in the line's order.
    private enum LineKey {
        static let environment: LogKey = "apns.environment"
        static let apnsError: LogKey = "apns.error"
        static let apnsID: LogKey = "apns.id"
        static let apnsReason: LogKey = "apns.reason"
        static let apnsStatus: LogKey = "apns.status"
        static let apnsUniqueID: LogKey = "apns.unique_id"
        static let app: LogKey = "app"
        static let device: LogKey = "device"
        static let heldReason: LogKey = "held.reason"
        static let holdFailed: LogKey = "hold.failed"
        static let httpStatus: LogKey = "http.status"
        static let latency: LogKey = "latency_ms"
        static let degraded: LogKey = "payload.degraded"
        static let degradedReason: LogKey = "payload.degraded_reason"
        static let peer: LogKey = "peer"
        static let reason: LogKey = "reason"
        static let requestID: LogKey = "request.id"
        static let route: LogKey = "route"
    }

    /// What one push's log line says, filled in as the push goes; the token is only ever logged as
    /// its fingerprint, never the key.
    private struct PushLog {
        var requestID: RequestID
        /// `push` or `relay-to`.
        var route: String
        var sandbox: Bool
        var peer: String?
        /// The `APPS_FILE` app's name; nil for the default app (whose lines carry no `app`).
        var app: String?
        /// Logged as its fingerprint, computed only when the line is written.
        var device: DeviceToken?
        var apnsID: String?
        /// Why the payload went out without the message, when it did.
        var degraded: String?
        /// Why the push was held (answered 201, delivered when Apple takes it), when it was.
        var held: String?
        /// Why a push that should have been held was not (the store at its cap, the disk full).
        var holdFailed: String?
    }

    /// The header that tells the sender its push was held, not yet delivered.
    package static let heldHeader = "X-Relay-Held"

    /// What Apple answered, or why nothing came, for the push's line: empty for a push refused
    /// before it was sent.
    private struct APNsOutcome {
        var status: Int?
        var reason: String?
        var error: String?
        /// Apple's `apns-unique-id` (the development environment only): what Apple's Push
        /// Notification Console looks a delivery up by.
        var uniqueID: String?
    }
}
