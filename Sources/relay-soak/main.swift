// relay-soak: a bounded soak and chaos run of the release relay (`apns-relay serve`, a child
// process) against the APNs emulator in this process, on loopback only. SOAK_SECONDS (300) of
// mixed pushes while a schedule injects Apple's faults, hostile-client floods and SIGHUP key
// rotations, and before them Apple away (the emulator stopped) for min(60 s, SOAK_SECONDS / 3),
// added to the run: the relay holds every push in its store (STORE_PATH) and delivers them when
// Apple is back; then one table of criteria, and exit status 1 unless every one holds.
//
// Environment: SOAK_SECONDS (300), SOAK_RATE (200 pushes/s from the normal clients),
// RELAY_BINARY (.build/release/apns-relay).
import Foundation
import Synchronization
import MockAPNs
import OpenSSLSupport
import BenchSupport
import CertificateSupport

let teamID = "SOAKTEAM01"
let topic = "com.example.app"
/// The keys the emulator trusts; each SIGHUP moves the relay to the next, as an operator rotates
/// to a new key (Apple gives each key its own id). Enough for the run, so no key comes back:
/// the emulator counts new tokens per key, as Apple does.
func soakKeyIDs(seconds: Double) -> [String] {
    (1...max(2, Int(seconds / 30) + 2)).map { "SOAKKEY" + String(format: "%03d", $0) }
}
/// The relay's pool, connection cap and stream-id retirement point: small, so the run reaches
/// the cap and retires connections many times.
let poolSize = 2
let connectionCap = 40
let maxStreamsPerConnection = 2000
/// How fast the pool may reconnect a slot in a storm ("a couple of connects per slot per second").
let connectsPerSlotPerSecond = 2.0
/// The held pushes' store, in the run's directory.
let storeFileName = "held.sqlite"
/// A push sent this close to Apple's return may meet it back: the pool keeps a push queued while a
/// reconnect attempt is due before its deadline (the relay's PUSH_TIMEOUT_MS, 8 s), and that
/// attempt may find Apple back. The away criterion counts pushes sent until this long before the
/// emulator restarts.
let awayMargin = 8.0

struct SoakSettings {
    var seconds: Double
    var rate: Double
    var binary: URL

    static func fromEnvironment() throws -> SoakSettings {
        let env = ProcessInfo.processInfo.environment
        let number = environmentNumber
        return SoakSettings(seconds: try number("SOAK_SECONDS", 300, 30...3600), rate: try number("SOAK_RATE", 200, 1...5000),
                            binary: URL(fileURLWithPath: env["RELAY_BINARY"] ?? ".build/release/apns-relay"))
    }
}

/// The relay's settings, in the env file it re-reads on SIGHUP (its own environment holds only PATH).
func writeSettings(directory: URL, keyIndex: Int, keys: [(id: String, key: ES256PrivateKey)], relayPort: Int, emulatorPort: Int) throws {
    let keyFile = directory.appendingPathComponent("AuthKey.p8")
    try keys[keyIndex].key.pemPKCS8.write(to: keyFile, atomically: true, encoding: .utf8)
    try """
        APNS_AUTH_KEY_FILE=\(keyFile.path)
        APNS_KEY_ID=\(keys[keyIndex].id)
        APPLE_TEAM_ID=\(teamID)
        TOPIC=\(topic)
        CONNECTION_POOL_SIZE=\(poolSize)
        PORT=\(relayPort)
        BIND_ADDRESS=127.0.0.1
        APNS_HOST=localhost:\(emulatorPort)
        APNS_SANDBOX_HOST=localhost:\(emulatorPort)
        APNS_CA_FILE=\(directory.appendingPathComponent("emulator-ca.pem").path)
        MAX_CONNECTIONS=\(connectionCap)
        APNS_MAX_STREAMS_PER_CONNECTION=\(maxStreamsPerConnection)
        STORE_PATH=\(directory.appendingPathComponent(storeFileName).path)
        LOG_LEVEL=notice

        """.write(to: directory.appendingPathComponent("relay.env"), atomically: true, encoding: .utf8)
}

/// One line on stdout, written at once (not buffered) so a CI log shows a long run as it goes.
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// One row of the table: what was measured against what must hold.
struct Criterion {
    var name: String
    var measured: String
    var bound: String
    var holds: Bool
}

/// The number after `name ` in Prometheus text (summed over label sets).
func metric(_ name: String, in text: String) -> Double? {
    var total: Double?
    for line in text.split(separator: "\n") where line.hasPrefix(name) {
        let rest = line.dropFirst(name.count)
        guard rest.first == " " || rest.first == "{", let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
        total = (total ?? 0) + value
    }
    return total
}

func run() -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    installInterruptHandlers()
    let settings: SoakSettings
    do { settings = try SoakSettings.fromEnvironment() } catch {
        say("relay-soak: \(error)")
        return 2
    }
    guard FileManager.default.isExecutableFile(atPath: settings.binary.path) else {
        say("relay-soak: \(settings.binary.path) is missing; build it with swift build -c release --product apns-relay (make soak does)")
        return 2
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-soak-\(getpid())")
    defer { try? FileManager.default.removeItem(at: directory) }

    // The emulator, trusting every key, with the standard faults (dead, slow, never-answered tokens)
    // and Apple's token rules: a token over an hour old is refused, and so is a new token for a
    // key sooner than 20 minutes after its previous one, on any connection. `delivered` holds
    // every push the emulator answered for good: 200, or 410 for a dead token (a push to a dead
    // token held while Apple was away is answered 201, and meets its 410 when delivered).
    let delivered = DeliveredIDs()
    // Pushes the emulator decided and never answered (a delayed answer whose connection went
    // first), by apns-id: the relay is right to send each again, and Apple then has it twice.
    let lostAnswers = Mutex([UInt128: Int]())
    let soakStart = monotonicNanos()
    let keys: [(id: String, key: ES256PrivateKey)]
    let emulator: MockAPNsServer
    let relayPort: Int
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        keys = try soakKeyIDs(seconds: settings.seconds).map { ($0, try ES256PrivateKey.generate()) }
        let certificates = try TestCertificates.make()
        try certificates.caPEM.write(to: directory.appendingPathComponent("emulator-ca.pem"), atomically: true, encoding: .utf8)
        var trusted: [String: MockKeyVerifier] = [:]
        for (id, key) in keys { trusted[id] = .es256(key.publicKey) }
        emulator = try MockAPNsServer.start(
            configuration: MockAPNsConfiguration(topics: [topic], teamID: teamID, keys: trusted, faults: .standard),
            certificates: certificates, recordCapacity: 100, onRecord: { record in
                guard record.status == 200 || record.status == 410, let id = record.apnsID, let number = uuidKey(id.utf8) else { return }
                if !delivered.insert(number) {
                    say("relay-soak: the emulator answered apns-id \(id) \(record.status.map(String.init) ?? "?") a second time, "
                        + "\(fixed(Double(monotonicNanos() - soakStart) / 1e9, 1)) s after it started")
                }
            }, onAnswerLost: { id in
                if let number = uuidKey(id.utf8) { lostAnswers.withLock { $0[number, default: 0] += 1 } }
            })
        relayPort = try freeLoopbackPort()
        try writeSettings(directory: directory, keyIndex: 0, keys: keys, relayPort: relayPort, emulatorPort: emulator.port)
    } catch {
        say("relay-soak: could not set up the emulator and the relay's files: \(error)")
        return 2
    }
    defer { emulator.stop() }
    let variants: [PushVariant]
    do { variants = try PushVariant.make(count: 8) } catch {
        say("relay-soak: could not encrypt the sample pushes: \(error)")
        return 2
    }

    let relay: RelayProcess
    do {
        relay = try RelayProcess(
            binary: settings.binary, arguments: ["serve", "--env-file", directory.appendingPathComponent("relay.env").path],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"],
            port: relayPort, logURL: directory.appendingPathComponent("relay.log"))
        try relay.waitUntilHealthy(timeout: 20)
    } catch {
        say("relay-soak: the relay did not start: \(error)")
        return 2
    }
    let readyBy = Date().addingTimeInterval(10)
    while Date() < readyBy, (try? httpGetStatus(port: relayPort, path: "/ready").get()) != 200 { usleep(100_000) }
    usleep(500_000)
    // Not counted: the store's file, -wal and -shm, opened with the first push held and kept
    // open; and Dispatch's own event manager (one epoll, one eventfd, one timerfd), which it
    // makes once, with the first timer the held pushes' delivery sets.
    let storePrefix = directory.appendingPathComponent(storeFileName).path
    let fdBaselineTargets = relay.openFileDescriptorTargets()
    let dispatchManager: Set<String> = ["anon_inode:[eventpoll]", "anon_inode:[eventfd]", "anon_inode:[timerfd]"]
    func fdCount(_ targets: [String]?) -> Int? {
        guard let targets else { return nil }
        var baseline = fdBaselineTargets ?? []
        var spared: Set<String> = []
        var count = 0
        for target in targets where !target.hasPrefix(storePrefix) {
            if let i = baseline.firstIndex(of: target) {
                baseline.remove(at: i)
            } else if dispatchManager.contains(target), spared.insert(target).inserted {
                continue
            }
            count += 1
        }
        return count
    }
    let fdBaseline = fdCount(fdBaselineTargets)

    let runStart = monotonicNanos()
    let warmup = max(5, settings.seconds / 10)
    let away = min(60, settings.seconds / 3)
    // The calm tail is long enough for the last event (at most 5 s) to end, then its second
    // half checks that the relay delivers again.
    let tail = max(10, settings.seconds / 10)
    say("relay-soak: \(fixed(settings.seconds + away, 0)) s (warm-up \(fixed(warmup, 0)) s, Apple away \(fixed(away, 0)) s, chaos, calm \(fixed(tail, 0)) s), "
          + "\(fixed(settings.rate, 0)) pushes/s, relay pid \(relay.pid) on 127.0.0.1:\(relayPort), emulator on 127.0.0.1:\(emulator.port), "
          + "pool \(poolSize), MAX_CONNECTIONS \(connectionCap), APNS_MAX_STREAMS_PER_CONNECTION \(maxStreamsPerConnection)")

    // Load: 12 paced normal clients (a tenth of their pushes to dead tokens), 4 slow, 2 never
    // answered. A slow or never-answered client sends its next push when the last would have
    // been answered had Apple been there (2 s; the push deadline, 8 s), so Apple away, when the
    // relay answers them at once, does not turn them into a flood of pushes no one can deliver.
    let tally = Tally()
    let normalClients = 12
    var workers: [SoakWorker] = []
    for i in 0..<normalClients {
        workers.append(SoakWorker(index: i + 1, kind: .normal, port: relayPort, variants: variants,
                                  interval: Double(normalClients) / settings.rate, deadShare: 0.1, tally: tally))
    }
    for i in 0..<4 {
        workers.append(SoakWorker(index: 100 + i, kind: .slow, port: relayPort, variants: variants, interval: 2, deadShare: 0, tally: tally))
    }
    for i in 0..<2 {
        workers.append(SoakWorker(index: 200 + i, kind: .neverAnswered, port: relayPort, variants: variants, interval: 8, deadShare: 0, tally: tally))
    }
    let health = HealthPoller(port: relayPort, runStart: runStart)

    usleep(UInt32(warmup * 1e6))
    let rssWarm = relay.rssKiB()

    // Apple away: every push meets connects refused, and must be answered 201 held.
    emulator.stop()
    // From when the relay has seen its connections go (a push sent before may still have met one).
    let readyGoneBy = Date().addingTimeInterval(5)
    while Date() < readyGoneBy, (try? httpGetStatus(port: relayPort, path: "/ready").get()) == 200 { usleep(20_000) }
    let awayFrom = monotonicNanos()
    say("relay-soak: \(fixed(Double(awayFrom - runStart) / 1e9, 0))s Apple away for \(fixed(away, 0)) s (emulator stopped, its port refusing)")
    usleep(UInt32(away * 1e6))
    let awayUntil = monotonicNanos() - UInt64(awayMargin * 1e9)
    do { try emulator.restart() } catch { say("relay-soak: the emulator did not come back: \(error)") }
    say("relay-soak: \(fixed(Double(monotonicNanos() - runStart) / 1e9, 0))s Apple back")

    let chaosLog = ChaosLog()
    var keyIndex = 0
    let chaos = ChaosSchedule(
        emulator: emulator, relayPort: relayPort, relayPID: relay.pid, connectionCap: connectionCap,
        rotateKey: {
            keyIndex = (keyIndex + 1) % keys.count
            try writeSettings(directory: directory, keyIndex: keyIndex, keys: keys, relayPort: relayPort, emulatorPort: emulator.port)
        },
        relayReady: { (try? httpGetStatus(port: relayPort, path: "/ready").get()) == 200 },
        log: chaosLog, runStart: runStart)
    let chaosEnd = runStart + UInt64((settings.seconds + away - tail) * 1e9)
    let window = settings.seconds - tail - warmup
    chaos.run(from: monotonicNanos(), until: chaosEnd, spacing: min(7, window / Double(ChaosEvent.allCases.count)))
    let calmFrom = runStart + UInt64((settings.seconds + away - tail / 2) * 1e9)
    tally.startCalm(at: calmFrom)
    let remaining = Double(runStart) / 1e9 + settings.seconds + away - Double(monotonicNanos()) / 1e9
    if remaining > 0 { usleep(UInt32(remaining * 1e6)) }

    // Stop the load; a never-answered push may take the whole push deadline to end.
    for worker in workers { worker.stop() }
    let stopBy = Date().addingTimeInterval(20)
    while Date() < stopBy, !workers.allSatisfy(\.isFinished) { usleep(50_000) }
    health.stop()
    let elapsed = Double(monotonicNanos() - runStart) / 1e9

    // Settle: the relay's fds go back to what it had before any client came (bounded wait).
    var fdEnd = fdCount(relay.openFileDescriptorTargets())
    let settleBy = Date().addingTimeInterval(15)
    while Date() < settleBy, let now = fdCount(relay.openFileDescriptorTargets()), let base = fdBaseline, now > base {
        usleep(200_000)
        fdEnd = fdCount(relay.openFileDescriptorTargets())
    }
    sleep(2)
    let fdEndTargets = relay.openFileDescriptorTargets()
    fdEnd = fdCount(fdEndTargets)
    let rssEnd = relay.rssKiB()
    let peakRSS = relay.peakRSSKiB()
    let metricsText = (try? httpGet(port: relayPort, path: "/metrics").get()).map { String(decoding: $0.body, as: UTF8.self) }
    let reconnectsMetric = metricsText.flatMap { metric("relay_apns_reconnects_total", in: $0) }
    let signedMetric = metricsText.flatMap { metric("relay_apns_provider_tokens_signed_total", in: $0) }
    let newTokens = emulator.rules.newTokensAccepted
    let tokenUpdatesRefused = emulator.rules.tokenUpdatesRefused
    let emulatorConnects = emulator.connectionCount
    let emulatorStreams = emulator.streamCount
    usleep(300_000)
    let counts = tally.snapshot
    // Held pushes still on their way (the last ones held in the calm tail): bounded.
    let drainBy = Date().addingTimeInterval(30)
    while Date() < drainBy, delivered.missing(counts.accepted) > 0 { usleep(100_000) }
    let lost = delivered.missing(counts.accepted)
    // A repeat is Apple's ambiguity, not the relay's bug, only as often as the emulator decided
    // the push and its answer never went out.
    let answersLost = lostAnswers.withLock { $0 }
    let repeatedIDs = delivered.repeated
    let unexplained = repeatedIDs.filter { $0.extra > answersLost[$0.id, default: 0] }
    let explained = repeatedIDs.reduce(0) { $0 + min($1.extra, answersLost[$1.id, default: 0]) }
    let repeats = repeatedIDs.reduce(0) { $0 + $1.extra } - explained
    let awayPushes = tally.pushes(sentFrom: awayFrom, to: awayUntil)
    let heldMetrics = (try? httpGet(port: relayPort, path: "/metrics").get()).map { String(decoding: $0.body, as: UTF8.self) }.map { text in
        ["relay_held_pushes_total", "relay_held_delivered_total", "relay_held_refused_total", "relay_held_expired_total",
         "relay_held_dropped_total", "relay_held_pushes", "relay_hold_failures_total"]
            .map { "\($0) \(metric($0, in: text).map { fixed($0, 0) } ?? "?")" }.joined(separator: ", ")
    }
    let relayAlive = relay.process.isRunning
    let logLines = relay.logLines()
    let exitStatus = relay.terminate(timeout: 12)
    let chaosState = chaosLog.state.withLock { $0 }
    let healthCounts = health.counts.withLock { $0 }

    // The criteria, from the issue; none is loosened to pass.
    let retirements = emulatorStreams / maxStreamsPerConnection + poolSize
    let connectBound = Int(Double(poolSize) * (1 + connectsPerSlotPerSecond * elapsed)) + retirements
    let stormBound = Double(poolSize) * (1 + connectsPerSlotPerSecond * chaosState.stormSeconds)
    let unexplainedConnects = max(0, emulatorConnects - poolSize - retirements)
    let reloads = logLines.count { $0.contains("SIGHUP: reloaded the provider key") }
    // Apple's token rule: a new token per identity at most every 20 minutes; each rotation is a
    // new identity and signs once.
    let tokensPerIdentity = 1 + Int(elapsed / 1200)
    let identities = 1 + chaosState.sighups
    let routine = tally.normalPushes(sentIn: chaosState.routineGoAwayWindows)
    var criteria: [Criterion] = []
    criteria.append(Criterion(name: "201s missing from the emulator's records", measured: "\(lost) of \(counts.accepted.count)"
                              + (counts.createdWithoutID > 0 ? " (+\(counts.createdWithoutID) without apns-id)" : ""),
                              bound: "0", holds: lost == 0 && counts.createdWithoutID == 0 && !counts.accepted.isEmpty))
    criteria.append(Criterion(name: "201s the emulator recorded again after answering them",
                              measured: "\(repeats)" + (explained > 0 ? " (+\(explained) whose answer was lost)" : ""),
                              bound: "0", holds: repeats == 0))
    criteria.append(Criterion(name: "pushes answered 201 held while Apple was away",
                              measured: "\(awayPushes.held) of \(awayPushes.sent)", bound: "all",
                              holds: awayPushes.sent > 0 && awayPushes.held == awayPushes.sent))
    criteria.append(Criterion(name: "4xx for tokens that are not dead", measured: "\(counts.wrong4xx)", bound: "0", holds: counts.wrong4xx == 0))
    criteria.append(Criterion(name: "non-2xx outside 410 dead / 503+Retry-After / 504", measured: "\(counts.wrongStatus)", bound: "0",
                              holds: counts.wrongStatus == 0))
    criteria.append(Criterion(name: "normal pushes 201 in the last \(fixed(tail / 2, 0)) s (calm)",
                              measured: "\(counts.calmNormalCreated) of \(counts.calmNormal)", bound: "all",
                              holds: counts.calmNormal > 0 && counts.calmNormalCreated == counts.calmNormal))
    criteria.append(Criterion(name: "pushes without an answer", measured: "\(counts.unanswered)", bound: "0", holds: counts.unanswered == 0))
    criteria.append(Criterion(name: "/health polls not answered 200", measured: "\(healthCounts.failures) of \(healthCounts.polls)",
                              bound: "0", holds: healthCounts.failures == 0 && healthCounts.polls > 0))
    criteria.append(Criterion(name: "APNs connects at the emulator", measured: "\(emulatorConnects)",
                              bound: "<= \(connectBound)", holds: emulatorConnects <= connectBound))
    criteria.append(Criterion(name: "connects/s in GOAWAY storms", measured: fixed(Double(chaosState.stormConnects) / max(chaosState.stormSeconds, 0.001), 1)
                              + " (\(chaosState.stormConnects) in \(fixed(chaosState.stormSeconds, 1)) s)",
                              bound: "<= \(fixed(stormBound / max(chaosState.stormSeconds, 0.001), 1))",
                              holds: chaosState.stormSeconds > 0 && Double(chaosState.stormConnects) <= stormBound))
    criteria.append(Criterion(name: "new provider tokens per key at the emulator", measured: "max \(newTokens.values.max() ?? 0) (\(newTokens.count) keys)",
                              bound: "<= \(tokensPerIdentity)", holds: !newTokens.isEmpty && newTokens.values.allSatisfy { $0 <= tokensPerIdentity }))
    criteria.append(Criterion(name: "provider tokens signed (relay_apns_provider_tokens_signed_total)",
                              measured: signedMetric.map { fixed($0, 0) } ?? "no /metrics",
                              bound: "\(identities)...\(identities * tokensPerIdentity)",
                              holds: (signedMetric ?? 0) >= Double(identities) && (signedMetric ?? .infinity) <= Double(identities * tokensPerIdentity)))
    criteria.append(Criterion(name: "429 TooManyProviderTokenUpdates answered", measured: "\(tokenUpdatesRefused)", bound: "0",
                              holds: tokenUpdatesRefused == 0))
    criteria.append(Criterion(name: "normal pushes not 201 during routine GOAWAYs (every 5 s)",
                              measured: "\(routine.sent - routine.created) of \(routine.sent)", bound: "0",
                              holds: routine.sent > 0 && routine.created == routine.sent))
    criteria.append(Criterion(name: "reconnects counted (relay_apns_reconnects_total)", measured: reconnectsMetric.map { fixed($0, 0) } ?? "no /metrics",
                              bound: ">= \(unexplainedConnects)", holds: (reconnectsMetric ?? -1) >= Double(unexplainedConnects)))
    let rssGrowth = (rssEnd ?? 0) - (rssWarm ?? 0)
    criteria.append(Criterion(name: "RSS end - RSS after warm-up (MiB)",
                              measured: "\(fixed(Double(rssGrowth) / 1024, 1)) (\(fixed(Double(rssWarm ?? 0) / 1024, 1)) -> \(fixed(Double(rssEnd ?? 0) / 1024, 1)))",
                              bound: "<= 10", holds: rssWarm != nil && rssEnd != nil && rssGrowth <= 10 * 1024))
    criteria.append(Criterion(name: "open fds end vs. baseline", measured: "\(fdEnd.map(String.init) ?? "?") vs. \(fdBaseline.map(String.init) ?? "?")",
                              bound: "<= baseline", holds: fdEnd != nil && fdBaseline != nil && fdEnd! <= fdBaseline!))
    criteria.append(Criterion(name: "SIGHUP reloads logged, relay alive", measured: "\(reloads) of \(chaosState.sighups), \(relayAlive ? "alive" : "dead")",
                              bound: "all, alive", holds: relayAlive && reloads == chaosState.sighups && chaosState.sighups > 0))
    criteria.append(Criterion(name: "SIGTERM at the end", measured: exitStatus.map { "exit \($0)" } ?? "killed after 12 s",
                              bound: "exit 0", holds: exitStatus == 0))

    let events = chaosState.events.map { "\(fixed($0.at, 0))s \($0.event.rawValue)" }
    say("chaos (\(events.count) events, \(chaosState.floodConnections) flood connections): " + events.joined(separator: "; "))
    var load: [String] = []
    for kind in PushKind.allCases {
        let statuses = (counts.byKindAndStatus[kind] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key == 0 ? "none" : String($0.key))×\($0.value)" }
        load.append("\(kind.rawValue) " + statuses.joined(separator: " "))
    }
    say("answers by kind: " + load.joined(separator: "; "))
    say("holding: \(heldMetrics ?? "no /metrics"); never-answered pushes answered 201 held: \(counts.neverAnsweredHeld) (the emulator never answers them)")
    say("relay peak RSS \(peakRSS.map { fixed(Double($0) / 1024, 1) } ?? "?") MiB; emulator streams \(emulatorStreams); relay log \(logLines.count) lines")
    let signings = logLines.filter { $0.contains("provider token signed") }.map { line in
        line.range(of: #""apns.token_reason":"[a-z_]+""#, options: .regularExpression).map { String(line[$0].dropFirst(21).dropLast()) } ?? "?"
    }
    say("provider token signings logged: \(signings.isEmpty ? "none" : signings.joined(separator: ", ")); new tokens per key at the emulator: "
        + newTokens.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
    if !unexplained.isEmpty {
        say("pushes Apple had more than once, unexplained: " + unexplained.sorted { $0.firstSeen < $1.firstSeen }.prefix(5).map {
            "first at \(fixed(Double($0.firstSeen - runStart) / 1e9, 1)) s, \($0.extra + 1) times, \(answersLost[$0.id, default: 0]) answers lost"
        }.joined(separator: "; "))
    }
    if !counts.examples.isEmpty { say("first wrong answers: " + counts.examples.joined(separator: "; ")) }
    if let first = healthCounts.firstFailure { say("first /health failure: \(first)") }
    if !awayPushes.others.isEmpty { say("pushes not answered 201 held while Apple was away: " + awayPushes.others.joined(separator: "; ")) }
    if let end = fdEndTargets, let base = fdBaselineTargets {
        // What the relay has open at the end beyond the baseline, by kind (socket numbers dropped).
        func kind(_ target: String) -> String { target.hasPrefix("socket:") ? "socket" : target }
        var extra = end.map(kind)
        for target in base.map(kind) { if let i = extra.firstIndex(of: target) { extra.remove(at: i) } }
        if !extra.isEmpty { say("fds open at the end beyond the baseline: " + extra.sorted().joined(separator: ", ")) }
    }

    let widths = (max(6, criteria.map { $0.name.count }.max()!), max(8, criteria.map { $0.measured.count }.max()!), max(5, criteria.map { $0.bound.count }.max()!))
    func row(_ a: String, _ b: String, _ c: String, _ d: String) -> String {
        a.padding(toLength: widths.0, withPad: " ", startingAt: 0) + "  " + b.padding(toLength: widths.1, withPad: " ", startingAt: 0)
            + "  " + c.padding(toLength: widths.2, withPad: " ", startingAt: 0) + "  " + d
    }
    say("")
    say(row("criterion", "measured", "bound", "verdict"))
    say(String(repeating: "-", count: widths.0 + widths.1 + widths.2 + 14))
    for c in criteria { say(row(c.name, c.measured, c.bound, c.holds ? "ok" : "FAIL")) }
    let failed = criteria.filter { !$0.holds }.count
    say("")
    say(failed == 0 ? "relay-soak: every criterion held" : "relay-soak: \(failed) of \(criteria.count) criteria failed")
    if failed > 0 {
        // The run's directory goes; its relay's log stays for whoever reads the failure.
        let kept = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/relay-soak-relay.log")
        try? FileManager.default.removeItem(at: kept)
        if (try? FileManager.default.copyItem(at: relay.logURL, to: kept)) != nil { say("relay-soak: the relay's log is in \(kept.path)") }
    }
    return failed == 0 ? 0 : 1
}

exit(run())
