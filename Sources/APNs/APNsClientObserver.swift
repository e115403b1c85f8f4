/// What the relay's metrics and logs hear about connections. Called on event-loop threads:
/// keep it short and never block. Every method has an empty default.
public protocol APNsClientObserver: Sendable {
    func connectionOpened(environment: APNsEnvironment, connection: Int)
    /// `error` is nil for a close we asked for (drained, shutdown).
    func connectionClosed(environment: APNsEnvironment, connection: Int, error: String?)
    func connectFailed(environment: APNsEnvironment, error: String)
    func tokenRenewed(environment: APNsEnvironment, connection: Int)
    func reconnectScheduled(environment: APNsEnvironment, after delay: Duration)
    /// A connection opens to replace one that ended (every reconnect, with or without a delay).
    func reconnecting(environment: APNsEnvironment, connection: Int)
    /// A push is sent again (another connection, a fresh token); a duplicate may reach the device.
    func pushRetried(environment: APNsEnvironment)
}

extension APNsClientObserver {
    public func connectionOpened(environment: APNsEnvironment, connection: Int) {}
    public func connectionClosed(environment: APNsEnvironment, connection: Int, error: String?) {}
    public func connectFailed(environment: APNsEnvironment, error: String) {}
    public func tokenRenewed(environment: APNsEnvironment, connection: Int) {}
    public func reconnectScheduled(environment: APNsEnvironment, after delay: Duration) {}
    public func reconnecting(environment: APNsEnvironment, connection: Int) {}
    public func pushRetried(environment: APNsEnvironment) {}
}
