/// What the relay's metrics and logs hear about connections. Called on event-loop threads:
/// keep it short and never block. Every method has an empty default.
package protocol APNsClientObserver: Sendable {
    func connectionOpened(environment: APNsEnvironment, connection: Int)
    /// `error` is nil for a close we asked for (drained, shutdown).
    func connectionClosed(environment: APNsEnvironment, connection: Int, error: String?)
    func connectFailed(environment: APNsEnvironment, error: String)
    /// The client's one provider token was signed (`reason`: first use, age, Apple's
    /// ExpiredProviderToken, a new key); `environment` is where the connection that first sent it
    /// lives. Apple rate-limits new tokens per team and key: these should be rare.
    func providerTokenSigned(environment: APNsEnvironment, reason: ProviderTokenSigning)
    func reconnectScheduled(environment: APNsEnvironment, after delay: Duration)
    /// A connection opens to replace one that ended (every reconnect, with or without a delay).
    func reconnecting(environment: APNsEnvironment, connection: Int)
    /// A push is sent again (another connection, a fresh token); a duplicate may reach the device.
    func pushRetried(environment: APNsEnvironment)
    /// A push sent on one event loop went to another loop's connections (its own had none ready or
    /// no free stream, or the pool has fewer connections than loops): a thread hop each way.
    func pushCrossedLoops(environment: APNsEnvironment)
}

extension APNsClientObserver {
    package func connectionOpened(environment: APNsEnvironment, connection: Int) {}
    package func connectionClosed(environment: APNsEnvironment, connection: Int, error: String?) {}
    package func connectFailed(environment: APNsEnvironment, error: String) {}
    package func providerTokenSigned(environment: APNsEnvironment, reason: ProviderTokenSigning) {}
    package func reconnectScheduled(environment: APNsEnvironment, after delay: Duration) {}
    package func reconnecting(environment: APNsEnvironment, connection: Int) {}
    package func pushRetried(environment: APNsEnvironment) {}
    package func pushCrossedLoops(environment: APNsEnvironment) {}
}
