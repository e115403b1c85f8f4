
/// What a push carries besides its payload and device: the same for `send` and `sendMany`.
public struct APNsPushOptions: Sendable, Hashable {
    /// The app's bundle id; nil takes the client's (`APNS_TOPIC`).
    public var topic: String?
    /// Guessed from the payload when nil (background when `aps` holds only `content-available`).
    public var pushType: APNsPushType?
    /// 10, 5 or 1; nil is 10, or 5 for background pushes.
    public var priority: Int?
    /// Unix seconds until which Apple keeps retrying; 0 = try once; nil = Apple's default.
    public var expiration: Int?
    /// Pushes with the same id (at most 64 bytes) replace each other on the device.
    public var collapseID: String?
    /// The `apns-id`; generated when nil (with `sendMany`, each push gets its own).
    public var apnsID: APNsID?
    /// The sandbox service, for debug builds of the app.
    public var sandbox: Bool
    /// How long to wait for Apple's answer, retries included; nil = the client's `pushTimeout`.
    public var timeout: Duration?

    public init(topic: String? = nil, pushType: APNsPushType? = nil, priority: Int? = nil, expiration: Int? = nil,
                collapseID: String? = nil, apnsID: APNsID? = nil, sandbox: Bool = false, timeout: Duration? = nil) {
        self.topic = topic; self.pushType = pushType; self.priority = priority; self.expiration = expiration
        self.collapseID = collapseID; self.apnsID = apnsID; self.sandbox = sandbox; self.timeout = timeout
    }

    public var environment: APNsEnvironment { sandbox ? .sandbox : .production }

    /// The notification these options make for `device`, checked against Apple's rules.
    /// - Parameter defaultTopic: the client's topic, used when `topic` is nil.
    package func notification(payload: APNsPayload, device: String, defaultTopic: String?) throws(APNsError) -> APNsNotification {
        guard let topic = topic ?? defaultTopic else {
            throw .invalid("no topic: pass one in the options or set APNS_TOPIC to the app's bundle id")
        }
        let token = try DeviceToken(DeviceToken.cleaned(device))
        return try APNsNotification(token: token, topic: topic, payload: payload, pushType: pushType, priority: priority,
                                    expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }
}
