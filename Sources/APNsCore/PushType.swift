/// The `apns-push-type` header. A struct, not an enum, because Apple keeps adding types
/// (widgets arrived in 2025) and a new one must not break callers' `switch`es.
public struct APNsPushType: Sendable, Hashable, CustomStringConvertible {
    /// The header value Apple expects.
    public let rawValue: String
    /// Apple routes some types by a topic suffix; sending without it is `BadTopic`/`DeviceTokenNotForTopic`.
    public let topicSuffix: String

    init(_ rawValue: String, suffix: String = "") {
        self.rawValue = rawValue
        self.topicSuffix = suffix
    }

    /// A visible alert, sound or badge: the relay's type (the extension only runs for alerts).
    public static let alert = APNsPushType("alert")
    /// A silent wake-up; Apple requires priority 5 or 1 for it.
    public static let background = APNsPushType("background")
    /// PushKit calls; the other types below each reach one system feature through its own topic suffix.
    public static let voip = APNsPushType("voip", suffix: ".voip")
    public static let location = APNsPushType("location", suffix: ".location-query")
    public static let complication = APNsPushType("complication", suffix: ".complication")
    public static let fileprovider = APNsPushType("fileprovider", suffix: ".pushkit.fileprovider")
    public static let mdm = APNsPushType("mdm")
    public static let liveactivity = APNsPushType("liveactivity", suffix: ".push-type.liveactivity")
    public static let pushtotalk = APNsPushType("pushtotalk", suffix: ".voip-ptt")
    public static let widgets = APNsPushType("widgets", suffix: ".push-type.widgets")

    /// Every type Apple documents, to look header values up.
    public static let allCases: [APNsPushType] = [
        .alert, .background, .voip, .location, .complication, .fileprovider, .mdm, .liveactivity, .pushtotalk, .widgets,
    ]

    /// Looks a header value up, so configuration and tests can name types as text.
    public init?(rawValue: String) {
        guard let known = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = known
    }

    /// Apple allows VoIP payloads a little more room (5 KiB) than every other type (4 KiB);
    /// a larger payload is refused with 413, so we check before sending.
    public var maxPayloadSize: Int { self == .voip ? 5120 : 4096 }

    /// The topic Apple expects for this type: the suffix is added unless it is already there.
    public func topic(for base: String) -> String {
        if topicSuffix.isEmpty || base.hasSuffix(topicSuffix) { return base }
        return base + topicSuffix
    }

    public var description: String { rawValue }

    public static func == (lhs: APNsPushType, rhs: APNsPushType) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
