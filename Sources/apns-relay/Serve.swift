#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import Observability
import Relay

enum Serve {
    static func run(_ arguments: inout Arguments) -> Never {
        var envFile: String?
        while let flag = arguments.next() {
            switch flag {
            case "--env-file": envFile = arguments.value(for: flag)
            default: fail("serve: unknown option \(flag) (see --help)", code: 2)
            }
        }
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
        var summary: [String: LogValue] = [:]
        for (key, value) in configuration.loggableSummary { summary[key] = .string(value) }
        summary["port"] = .int(relay.port)
        logger.notice("apns-relay listening", summary)
        Shutdown.onSignal(logger: logger) { await relay.shutdown(deadline: .seconds(9)) }
        dispatchMain()
    }

    /// The settings, or one line naming the variable at fault and exit 1.
    static func loadConfiguration(envFile: String?) -> RelayConfiguration {
        do {
            return try RelayConfiguration.load(environment: ProcessInfo.processInfo.environment, envFile: envFile)
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
enum Shutdown {
    /// Dispatch sources must stay alive as long as the process; they live here. Unsafe is fine:
    /// written once, on the main thread, before `dispatchMain`, and never read.
    nonisolated(unsafe) static var sources: [DispatchSourceSignal] = []
    static let started = Atomic<Bool>(false)

    static func onSignal(logger: Logger, _ stop: @escaping @Sendable () async -> Bool) {
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler {
                if started.exchange(true, ordering: .sequentiallyConsistent) {
                    logger.warning("second signal: exiting without waiting for the drain")
                    exit(1)
                }
                logger.notice("signal \(number): draining")
                Task {
                    let drained = await stop()
                    logger.notice(drained ? "drained; bye" : "drain deadline passed; closed the rest")
                    exit(0)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
