#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import MockAPNs
import Observability
import OpenSSLSupport
import Relay
import EventLoop

/// The relay with an in-process APNs emulator and a throw-away key: `make run` shows the whole
/// path (WebPush in, APNs request out) with nothing to configure.
enum Demo {
    static let topic = "com.example.app"
    static let teamID = "TEAM123456"
    static let keyID = "DEMOKEY123"
    /// The printed push, whose subscription key decrypts what the emulator receives.
    static let current = Mutex<DemoPush?>(nil)

    static func run(_ arguments: inout Arguments) -> Never {
        var once = false
        var away = false
        var route = DemoPush.Route.push
        while let flag = arguments.next() {
            switch flag {
            case "--once": once = true
            case "--away": away = true
            case "--route":
                guard let name = arguments.next(), let chosen = DemoPush.Route(rawValue: name) else {
                    fail("demo: --route takes \(DemoPush.Route.allCases.map(\.rawValue).joined(separator: " or "))", code: 2)
                }
                route = chosen
            default: fail("demo: unknown option \(flag) (see --help)", code: 2)
            }
        }
        var port = 3000
        if let text = ProcessEnvironment.variables["PORT"], !text.isEmpty {
            guard let p = Int(text), (0...65535).contains(p) else { fail("PORT must be a port number from 0 to 65535, got \"\(text)\"") }
            port = p
        }
        // Ctrl-C then drains (see `MainThread`); `--once` ends by itself and keeps the default.
        if !once { MainThread.block([SIGTERM, SIGINT, SIGUSR1, SIGUSR2]) }
        if away && !once { fail("demo: --away goes with --once (without it, SIGUSR1 and SIGUSR2 take the emulator away and back)", code: 2) }

        let key: ES256PrivateKey
        let mock: MockAPNsServer
        let printRecord: (@Sendable (MockRecord) -> Void)? = once ? nil : { @Sendable record in
            var text = describe(record)
            if let push = current.withLock({ $0 }) {
                text += "\n--- the device decrypts \(push.route.encryptedKeys) to:\n" + push.decrypt(payload: record.payload)
            }
            say(text)
        }
        do {
            key = try ES256PrivateKey.generate()
            mock = try MockAPNsServer.start(
                configuration: MockAPNsConfiguration(topics: [topic], teamID: teamID, keys: [keyID: .es256(key.publicKey)]),
                onRecord: printRecord)
        } catch {
            fail("cannot start the APNs emulator: \(error)")
        }
        // The store of held pushes in a directory of its own, gone when the demo ends.
        var template = Array("/tmp/apns-relay-demo-XXXXXX".utf8CString)
        guard let directory = mkdtemp(&template).map({ String(cString: $0) }) else { fail("cannot make a directory for the demo's store") }
        let store = directory + "/held.sqlite"
        defer { removeStore(directory) }
        var configuration = RelayConfiguration(
            authKey: key.pemPKCS8, keyID: keyID, teamID: teamID, topic: topic, connectionPoolSize: 1, port: port,
            bindAddress: "127.0.0.1",
            apnsHost: .init(host: "localhost", port: mock.port), apnsSandboxHost: .init(host: "localhost", port: mock.port),
            logLevel: .info, logFormat: .text)
        configuration.hold = HoldConfiguration(store: .file(path: store, chosenBy: .operatorSetting))
        let logger = Logger(label: "apns-relay", level: .info, sink: TextLogSink())
        let relay: RelayServer
        do {
            relay = try RelayServer.start(configuration: configuration, logger: logger,
                                          options: RelayServer.Options(extraCAPEM: mock.caPEM))
        } catch {
            fail("cannot start the relay on 127.0.0.1:\(port): \(error) (set PORT to use another port)")
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !relay.isReady && ContinuousClock.now < deadline { usleep(10_000) }
        guard relay.isReady else { fail("the relay could not connect to its APNs emulator within 10 s") }

        let push: DemoPush
        do {
            push = try DemoPush.make(route: route)
        } catch {
            fail("cannot encrypt the demo push: \(error)")
        }
        current.withLock { $0 = push }
        if once { runOnce(push, relay: relay, mock: mock, away: away, directory: directory) }

        say("""
            apns-relay demo: the relay listens on http://127.0.0.1:\(relay.port), the APNs emulator on \
            localhost:\(mock.port) (TLS + HTTP/2, topic \(topic)).

            Post a Mastodon-shaped aesgcm push to \(route == .push ? "metatext-apns's route" : "toot-relay's route") \
            (any 64-hex-digit token works; tokens starting with
            dead, 0bad, 4290, 5030, d7f7, 0ff0 get Apple's failures: 410, 410, 429, 503, 502, 504):

            \(push.curl(port: relay.port))

            Every request the emulator receives is printed below. Apple out of reach: `kill -USR1 \(getpid())`
            takes the emulator away (pushes are then answered 201, held in \(store)), `kill -USR2 \(getpid())`
            brings it back (the held pushes go out). Ctrl-C stops.
            """)
        var shutdown = Shutdown(logger: logger) {
            let drained = await relay.shutdown(deadline: .seconds(5))
            mock.stop()
            removeStore(directory)
            return drained
        }
        let emulatorSwitch = EmulatorSwitch(mock: mock, store: store)
        MainThread.park(handling: [SIGTERM, SIGINT, SIGUSR1, SIGUSR2]) { signal in
            if !emulatorSwitch.handle(signal) { shutdown.signal(signal) }
        }
    }

    /// SIGUSR1 takes the emulator away, SIGUSR2 brings it back.
    final class EmulatorSwitch: Sendable {
        let mock: MockAPNsServer
        let store: String

        init(mock: MockAPNsServer, store: String) {
            self.mock = mock
            self.store = store
        }

        /// Whether `signal` was one of the two.
        func handle(_ signal: Int32) -> Bool {
            switch signal {
            case SIGUSR1:
                mock.stop()
                say("--- the APNs emulator is away: pushes are held in \(store) (SIGUSR2 brings it back)")
            case SIGUSR2:
                do {
                    try mock.restart()
                    say("--- the APNs emulator is back: held pushes go out")
                } catch {
                    say("--- the APNs emulator could not come back: \(error)")
                }
            default:
                return false
            }
            return true
        }
    }

    /// The demo's store and its directory.
    static func removeStore(_ directory: String) {
        for name in ["held.sqlite", "held.sqlite-wal", "held.sqlite-journal"] { unlink(directory + "/" + name) }
        rmdir(directory)
    }

    /// Sends one push through the relay, prints the answer and what "Apple" received, exits 0
    /// when the relay answered 201 with the apns-id the emulator saw.
    /// With `away`, the emulator is away while the push is sent (the relay holds it in the
    /// store under `directory`) and comes back after the answer: exit 0 when the held push then
    /// reaches it with the id the relay answered.
    static func runOnce(_ push: DemoPush, relay: RelayServer, mock: MockAPNsServer, away: Bool, directory: String) -> Never {
        if away {
            mock.stop()
            say("the APNs emulator is away: pushes are held in \(directory)/held.sqlite")
        }
        say("POST \(push.target) (aesgcm, \(push.body.count) bytes)")
        let response: PlainHTTP.Response
        do {
            response = try PlainHTTP.request(method: "POST", port: relay.port, target: push.target,
                                             headers: push.headers, body: push.body, timeoutSeconds: 10)
        } catch {
            fail("demo --once: the relay did not answer: \(error)")
        }
        say("relay answered \(response.status)")
        for (name, value) in response.headers { say("  \(name): \(value)") }
        if !response.body.isEmpty { say("  " + String(decoding: response.body, as: UTF8.self)) }
        if away {
            do { try mock.restart() } catch { fail("demo --once --away: the emulator could not come back: \(error)") }
            say("the APNs emulator is back")
        }
        _ = mock.waitForRecords(count: 1, timeout: .seconds(away ? 10 : 2))
        let record = mock.records.first
        if let record {
            say(describe(record))
            say("--- the device decrypts \(push.route.encryptedKeys) to:\n" + push.decrypt(payload: record.payload))
        }

        let done = DispatchSemaphore(value: 0)
        Task {
            await relay.shutdown(deadline: .seconds(2))
            done.signal()
        }
        done.wait()
        mock.stop()
        removeStore(directory)
        let ok = response.status == 201 && record?.status == 200 && record?.header("apns-id") == response.header("apns-id")
        exit(ok ? 0 : 1)
    }

    /// The APNs request as the emulator received it: pseudo-headers, headers (the JWT cut
    /// short), the payload, and what the emulator answered.
    static func describe(_ record: MockRecord) -> String {
        var lines = ["--- APNs emulator received (connection \(record.connectionID), stream \(record.streamID)):",
                     "\(record.method) \(record.path)"]
        for (name, value) in record.headers {
            if name == "authorization" {
                lines.append("\(name): \(value.prefix(40))… (\(value.utf8.count) chars)")
            } else {
                lines.append("\(name): \(value)")
            }
        }
        lines.append("")
        lines.append(String(decoding: record.payload, as: UTF8.self))
        let answer = record.status.map { String($0) } ?? "no answer"
        lines.append("--- answered \(answer)\(record.reason.map { " " + $0 } ?? "")")
        return lines.joined(separator: "\n")
    }
}
