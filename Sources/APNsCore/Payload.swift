#if canImport(Glibc)
import Glibc
#endif

/// The encoded JSON body of a push, with what we learned about it while building it.
///
/// Kept as bytes so the size checked against Apple's limit is exactly the size sent.
public struct APNsPayload: Sendable, Hashable {
    /// The exact bytes sent as the request body.
    public let bytes: [UInt8]
    /// True when `aps` holds only `content-available`: Apple wants such pushes typed
    /// `background` at priority 5, and throttles or drops them otherwise.
    public let isBackgroundOnly: Bool

    init(bytes: [UInt8], isBackgroundOnly: Bool) {
        self.bytes = bytes
        self.isBackgroundOnly = isBackgroundOnly
    }

    /// Accepts a payload built elsewhere; it must be a JSON object with an `aps` object,
    /// since Apple refuses anything else after we have spent a stream on it.
    public init(json bytes: [UInt8]) throws(APNsError) {
        guard !bytes.isEmpty else { throw .invalid("payload is empty; Apple answers PayloadEmpty") }
        switch JSONCheck.check(bytes) {
        case .notJSON: throw .invalid("payload is not valid JSON")
        case .notObject: throw .invalid("payload must be a JSON object")
        case .noAPSObject: throw .invalid("payload must hold an \"aps\" object")
        case .valid(let backgroundOnly):
            self.bytes = bytes
            self.isBackgroundOnly = backgroundOnly
        }
    }

    /// Bytes from one of our own builders that always writes a JSON object whose `aps` holds an
    /// alert (the relay's WebPush mapper): taken as they are, since scanning them again could only
    /// find what the builder wrote. The notification still checks the size.
    package init(builtAlert bytes: [UInt8]) {
        self.bytes = bytes
        self.isBackgroundOnly = false
    }

    /// The payload as text, for logs in tests and the `send` command.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// How strongly iOS may break through Focus for an alert.
public struct APNsInterruptionLevel: Sendable, Hashable {
    /// The value of `interruption-level`.
    public let rawValue: String
    init(_ rawValue: String) { self.rawValue = rawValue }
    /// Added to the list silently, never lights the screen.
    public static let passive = APNsInterruptionLevel("passive")
    /// The default: sound and screen, but Focus may hold it back.
    public static let active = APNsInterruptionLevel("active")
    /// Breaks through Focus; needs the time-sensitive capability in the app.
    public static let timeSensitive = APNsInterruptionLevel("time-sensitive")
    /// Needs Apple's critical-alerts entitlement in the app; without it iOS shows a normal alert.
    public static let critical = APNsInterruptionLevel("critical")
}

/// A visible alert. Every field but title and body is optional; `build()` refuses what
/// Apple or iOS would reject, before anything is sent.
public struct APNsAlertPayload: Sendable {
    /// Any one of title, subtitle, body, title-loc-key or loc-key is enough for something to show.
    public var title: String
    public var body: String
    public var subtitle: String?
    public var titleLocKey: String?
    public var titleLocArgs: [String]?
    public var locKey: String?
    public var locArgs: [String]?
    public var badge: Int?
    /// A sound's name (a string literal works) or `.critical(name:volume:)`.
    public var sound: APNsSound?
    public var category: String?
    public var threadID: String?
    /// Lets a notification service extension rewrite the alert (the relay needs it to decrypt).
    public var mutableContent: Bool
    public var interruptionLevel: APNsInterruptionLevel?
    /// 0 to 1: how iOS ranks this notification in a summary.
    public var relevanceScore: Double?
    public var targetContentID: String?
    /// The app's own keys, written beside `aps`.
    public var data: [String: APNsJSON]

    /// Every option defaults to absent, so a call names only what the push needs.
    public init(
        title: String = "", body: String = "", subtitle: String? = nil,
        titleLocKey: String? = nil, titleLocArgs: [String]? = nil,
        locKey: String? = nil, locArgs: [String]? = nil,
        badge: Int? = nil, sound: APNsSound? = nil, category: String? = nil, threadID: String? = nil,
        mutableContent: Bool = false, interruptionLevel: APNsInterruptionLevel? = nil,
        relevanceScore: Double? = nil, targetContentID: String? = nil,
        data: [String: APNsJSON] = [:]
    ) {
        self.title = title; self.body = body; self.subtitle = subtitle
        self.titleLocKey = titleLocKey; self.titleLocArgs = titleLocArgs
        self.locKey = locKey; self.locArgs = locArgs
        self.badge = badge; self.sound = sound; self.category = category; self.threadID = threadID
        self.mutableContent = mutableContent; self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore; self.targetContentID = targetContentID
        self.data = data
    }

    /// Refuses what Apple or iOS would reject, then encodes: `aps` first (fixed key order), then `data` in sorted key order.
    public func build() throws(APNsError) -> APNsPayload {
        // Empty text shows nothing, whichever field holds it.
        let shows = [title, body, subtitle ?? "", locKey ?? "", titleLocKey ?? ""].contains { !$0.isEmpty }
        guard shows else {
            throw .invalid("an alert needs a title, subtitle, body, title-loc-key or loc-key; all are empty, so nothing would show")
        }
        if titleLocArgs != nil, titleLocKey == nil {
            throw .invalid("title-loc-args need a title-loc-key to fill in; set titleLocKey")
        }
        if locArgs != nil, locKey == nil {
            throw .invalid("loc-args need a loc-key to fill in; set locKey")
        }
        if let badge, badge < 0 { throw .invalid("badge must be 0 or more (0 clears it); got \(badge)") }
        if let relevanceScore, !(0...1).contains(relevanceScore) {
            throw .invalid("relevance-score must be between 0 and 1; got \(relevanceScore)")
        }
        if data["aps"] != nil { throw .invalid("data may not hold an \"aps\" key; Apple reserves it") }

        var w = JSONWriter()
        w.raw("{\"aps\":{\"alert\":{")
        var first = true
        if !title.isEmpty { w.key("title", first: &first); w.string(title) }
        if let subtitle { w.key("subtitle", first: &first); w.string(subtitle) }
        if !body.isEmpty { w.key("body", first: &first); w.string(body) }
        if let titleLocKey { w.key("title-loc-key", first: &first); w.string(titleLocKey) }
        if let titleLocArgs { w.key("title-loc-args", first: &first); w.stringArray(titleLocArgs) }
        if let locKey { w.key("loc-key", first: &first); w.string(locKey) }
        if let locArgs { w.key("loc-args", first: &first); w.stringArray(locArgs) }
        w.raw("}")
        first = false
        if let badge { w.key("badge", first: &first); w.int(badge) }
        if let sound { w.key("sound", first: &first); try sound.write(to: &w) }
        if let category { w.key("category", first: &first); w.string(category) }
        if let threadID { w.key("thread-id", first: &first); w.string(threadID) }
        if mutableContent { w.key("mutable-content", first: &first); w.int(1) }
        if let interruptionLevel { w.key("interruption-level", first: &first); w.string(interruptionLevel.rawValue) }
        if let relevanceScore { w.key("relevance-score", first: &first); try w.double(relevanceScore) }
        if let targetContentID { w.key("target-content-id", first: &first); w.string(targetContentID) }
        w.raw("}")
        try w.members(data, first: &first)
        w.raw("}")
        return APNsPayload(bytes: w.bytes, isBackgroundOnly: false)
    }
}

/// A silent push that wakes the app (`content-available: 1`), with the app's keys beside `aps`.
public struct APNsBackgroundPayload: Sendable {
    /// The app's own keys, written beside `aps`.
    public var data: [String: APNsJSON]

    /// A silent push usually carries the app's keys, so they are the only option.
    public init(data: [String: APNsJSON] = [:]) { self.data = data }

    /// Refuses an `aps` key in `data`, then encodes with `content-available: 1`.
    public func build() throws(APNsError) -> APNsPayload {
        if data["aps"] != nil { throw .invalid("data may not hold an \"aps\" key; Apple reserves it") }
        var w = JSONWriter()
        w.raw("{\"aps\":{\"content-available\":1}")
        var first = false
        try w.members(data, first: &first)
        w.raw("}")
        return APNsPayload(bytes: w.bytes, isBackgroundOnly: true)
    }
}
