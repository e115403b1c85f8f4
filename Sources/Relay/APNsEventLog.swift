import APNs
import Observability

/// What the operator sees of the connections to Apple: each event is counted (RelayMetrics) and
/// logged, so a wrong CA, a refused key or an Apple outage shows up in the logs before the
/// first push fails.
struct APNsEventLog: APNsClientObserver {
    let metrics: RelayMetrics
    let logger: Logger

    func connectionOpened(environment: APNsEnvironment, connection: Int) {
        metrics.connectionOpened(environment: environment, connection: connection)
        logger.info("APNs connection opened", ["apns.environment": .string("\(environment)"), "apns.connection": .int(connection)])
    }

    func connectionClosed(environment: APNsEnvironment, connection: Int, error: String?) {
        metrics.connectionClosed(environment: environment, connection: connection, error: error)
        var meta: [String: LogValue] = ["apns.environment": .string("\(environment)"), "apns.connection": .int(connection)]
        if let error { meta["error"] = .string(error) }
        logger.log(error == nil ? .info : .warning, "APNs connection closed", meta)
    }

    func connectFailed(environment: APNsEnvironment, error: String) {
        metrics.connectFailed(environment: environment, error: error)
        logger.warning("APNs connection failed", ["apns.environment": .string("\(environment)"), "error": .string(error)])
    }

    func providerTokenSigned(environment: APNsEnvironment, reason: ProviderTokenSigning) {
        metrics.providerTokenSigned(environment: environment, reason: reason)
        logger.notice("provider token signed", ["apns.environment": .string("\(environment)"), "apns.token_reason": .string(reason.rawValue)])
    }

    func reconnectScheduled(environment: APNsEnvironment, after delay: Duration) {
        logger.notice("APNs reconnect scheduled", ["apns.environment": .string("\(environment)"), "delay_ms": .int(Int(delay / .milliseconds(1)))])
    }

    func reconnecting(environment: APNsEnvironment, connection: Int) {
        metrics.reconnecting(environment: environment, connection: connection)
        logger.notice("APNs reconnecting", ["apns.environment": .string("\(environment)"), "apns.connection": .int(connection)])
    }

    func pushCrossedLoops(environment: APNsEnvironment) {
        metrics.pushCrossedLoops(environment: environment)
    }

    func pushRetried(environment: APNsEnvironment) {
        metrics.pushRetried(environment: environment)
        logger.debug("push retried on another connection", ["apns.environment": .string("\(environment)")])
    }
}
