/// An alert's `sound`: a sound file's name, or the critical-alert dictionary
/// `{"critical":1,"name":…,"volume":…}` (which needs Apple's critical-alerts entitlement).
public struct APNsSound: Sendable, Hashable, ExpressibleByStringLiteral {
    enum Value: Hashable, Sendable {
        case named(String)
        case critical(name: String, volume: Double)
    }
    let value: Value

    /// A sound in the app bundle, or `"default"`.
    public static func named(_ name: String) -> APNsSound { APNsSound(value: .named(name)) }

    /// A critical alert's sound, played even when the device is muted; `volume` 0 to 1.
    public static func critical(name: String = "default", volume: Double = 1) -> APNsSound {
        APNsSound(value: .critical(name: name, volume: volume))
    }

    /// `"default"`, the system sound.
    public static let `default` = APNsSound.named("default")

    private init(value: Value) { self.value = value }

    public init(stringLiteral name: String) { self.value = .named(name) }

    func write(to w: inout JSONWriter) throws(APNsError) {
        switch value {
        case .named(let name):
            w.string(name)
        case .critical(let name, let volume):
            guard (0...1).contains(volume) else {
                throw .invalid("a critical sound's volume must be between 0 and 1; got \(volume)")
            }
            w.raw("{\"critical\":1,\"name\":"); w.string(name)
            w.raw(",\"volume\":"); try w.double(volume)
            w.raw("}")
        }
    }
}
