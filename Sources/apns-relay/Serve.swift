#if canImport(Glibc)
import Glibc
#endif
import Observability
import Relay
import EventLoop
import Basics

enum Serve {
    static func run(_ arguments: inout Arguments) -> Never {
        var envFile: String?
        var ignored: [String] = []
        while let flag = arguments.next() {
            switch flag {
            case "--env-file": envFile = arguments.value(for: flag)
            default:
                guard let given = ForeignFlags.take(flag, &arguments) else { fail("serve: unknown option \(flag) (see --help)", code: 2) }
                ignored.append(given)
            }
        }
        MainThread.block([SIGTERM, SIGINT, SIGHUP])
        // Request bodies near the 64 KiB cap get their own mappings, so memory held by slow
        // senders goes back to the kernel as soon as their requests end.
        Allocator.mapBlocks(ofAtLeast: 64 << 10)
        let configuration = loadConfiguration(envFile: envFile)
        let logger = makeLogger(configuration)
        let relay: RelayServer
        do {
            relay = try RelayServer.start(configuration: configuration, logger: logger)
        } catch let error as ConfigurationError {
            fail(error.message)
        } catch {
            fail("cannot listen on \(configuration.bindAddress):\(configuration.port): \(error)")
        }
        var summary = configuration.loggableSummary
        summary["port"] = .int(relay.port)
        // Why that many loops (`event_loops`): EVENT_LOOPS, or the CPUs the process may use.
        summary["event_loops.reason"] = .string(configuration.eventLoops != nil ? "EVENT_LOOPS" : CPUBudget.current.reason)
        if !relay.responder.apps.names.isEmpty { summary["apps"] = .string(relay.responder.apps.names.joined(separator: ", ")) }
        summary["version"] = .string(RelayVersion.current)
        // Another relay's defaults taken for what its env file leaves unset, and why.
        if let defaults = configuration.foreignDefaults {
            summary["defaults_from"] = .string(defaults.family)
            summary["defaults_from.reason"] = .string(defaults.reason)
            summary["defaults"] = .string(defaults.taken.joined(separator: ", "))
        }
        logger.notice("apns-relay listening", summary)
        if let names = configuration.foreignNames {
            logger.notice("read the variable names of \(names); this relay's own names are in README's migration sections")
        }
        if !ignored.isEmpty { logger.notice(ForeignFlags.ignoredLine(ignored)) }
        for warning in configuration.warnings { logger.warning(warning) }
        warnOfExpiry(relay, logger: logger)
        park(relay, logger: logger, envFile: envFile)
    }

    /// A push certificate that expires within `PushCertificate.warningSeconds` is a warning
    /// (at start and on SIGHUP); the gauge `relay_apns_certificate_expiry_seconds` is the alert.
    static func warnOfExpiry(_ relay: RelayServer, logger: Logger) {
        let now = WallTime.unixSecondsNow
        for (app, certificate) in relay.certificates where certificate.secondsLeft(now: now) < PushCertificate.warningSeconds {
            logger.warning(expiryLine(app: app, certificate, now: now),
                           ["app": .string(app), "apns.certificate_expires": .string(certificate.expiryDay)])
        }
    }

    /// `app default: push certificate … expires on 2027-01-02, in 30 days`.
    static func expiryLine(app: String, _ certificate: PushCertificate, now: Int64) -> String {
        let days = certificate.secondsLeft(now: now) / 86_400
        let soon = certificate.secondsLeft(now: now) < PushCertificate.warningSeconds ? ": renew it in Apple's developer account and replace the file (SIGHUP reloads it)" : ""
        return "app \(app): push certificate \(certificate.identity.commonName ?? "?") expires on \(certificate.expiryDay), in \(days) days\(soon)"
    }

    /// Handles the signals for the rest of the process's life: a drain, or a reload.
    /// A function of its own, taking the relay as an argument: with the relay a local that
    /// `do`/`catch` initialises, captured by both closures, Swift 6.3.1's optimiser
    /// (CopyPropagation, in `-O` builds such as the shipped one) crashed its ownership check.
    private static func park(_ relay: RelayServer, logger: Logger, envFile: String?) -> Never {
        var shutdown = Shutdown(logger: logger) { await relay.shutdown(deadline: .seconds(9)) }
        MainThread.park(handling: [SIGTERM, SIGINT, SIGHUP]) { number in
            guard number == SIGHUP else { return shutdown.signal(number) }
            Reload.run(logger: logger) { () throws(ConfigurationError) in
                let new = try readConfiguration(envFile: envFile)
                return (new, try relay.reload(new))
            }
            warnOfExpiry(relay, logger: logger)
        }
    }

    static func readConfiguration(envFile: String?) throws(ConfigurationError) -> RelayConfiguration {
        try RelayConfiguration.load(environment: ProcessEnvironment.variables, envFile: envFile)
    }

    /// The settings, or one line naming the variable at fault and exit 1.
    static func loadConfiguration(envFile: String?) -> RelayConfiguration {
        do {
            return try readConfiguration(envFile: envFile)
        } catch {
            fail(error.message)
        }
    }

    static func makeLogger(_ configuration: RelayConfiguration) -> Logger {
        let sink: any LogSink = configuration.logFormat == .json ? JSONLogSink() : TextLogSink()
        return Logger(label: "apns-relay", level: configuration.logLevel, sink: sink)
    }
}

/// SIGTERM (Docker, systemd) and SIGINT (a terminal) stop the relay gracefully: stop
/// accepting, let pushes in flight get their answer, close the APNs connections, exit 0.
/// A second signal while draining exits at once.
struct Shutdown {
    let logger: Logger
    let stop: @Sendable () async -> Bool
    private var started = false

    init(logger: Logger, _ stop: @escaping @Sendable () async -> Bool) {
        self.logger = logger
        self.stop = stop
    }

    /// Called by `MainThread.park` for each SIGTERM or SIGINT, one at a time; the drain runs
    /// off the main thread, so a second signal is seen while the first drains.
    mutating func signal(_ number: Int32) {
        if started {
            logger.warning("second signal: exiting without waiting for the drain")
            exit(1)
        }
        started = true
        logger.notice("signal \(number): draining")
        let (logger, stop) = (logger, stop)
        Task {
            let drained = await stop()
            logger.notice(drained ? "drained; bye" : "drain deadline passed; closed the rest")
            exit(0)
        }
    }
}

/// SIGHUP re-reads the settings (the environment, `--env-file`, the key, certificate, CA and apps
/// files) and applies the key, key id and team to the next push's token, a push certificate and
/// the CAs trusted for Apple's servers to new connections, and `APPS_FILE` to the routes: a
/// rotation without a restart. A configuration that does not load is logged, naming its variable, and the running
/// one stays. The process never exits on SIGHUP.
enum Reload {
    /// - Parameter reload: loads the settings again and applies them; returns them with what the
    ///   reload did.
    static func run(logger: Logger, _ reload: () throws(ConfigurationError) -> (RelayConfiguration, RelayServer.ReloadOutcome)) {
        do throws(ConfigurationError) {
            let (new, outcome) = try reload()
            switch (new.credentials, outcome.credentialsChanged) {
            case (.token(let key), true):
                logger.notice("SIGHUP: reloaded the provider key; its token is signed and every connection sends it from its next push",
                              ["apns.key_id": .string(key.keyID), "apns.team_id": .string(key.teamID), "apps": .int(new.apps.count)])
            case (.certificate(let certificate), true):
                logger.notice("SIGHUP: reloaded the push certificate; every connection drains while its replacement presents it",
                              ["apns.certificate_expires": .string(certificate.expiryDay), "apps": .int(new.apps.count)])
            case (_, false):
                logger.notice("SIGHUP: reloaded; the default app's key or certificate is unchanged and its connections stay",
                              ["apps": .int(new.apps.count)])
            }
            if outcome.trustChanged {
                logger.notice("SIGHUP: the CAs trusted for Apple's servers changed; every connection drains while its replacement trusts them",
                              ["apns.ca_file": .string(new.caFile ?? "")])
            }
            for warning in new.warnings { logger.warning("SIGHUP: \(warning)") }
            if !outcome.needRestart.isEmpty {
                logger.warning("SIGHUP: these settings changed but apply only after a restart: \(outcome.needRestart.joined(separator: ", "))")
            }
        } catch {
            logger.error("SIGHUP: reload refused, the running configuration stays: \(error.message)",
                         ["config.variable": .string(error.variable)])
        }
    }
}
