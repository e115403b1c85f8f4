// relay-bench: how many Mastodon-shaped pushes per second the relay turns into APNs requests, at
// what latency and cost, against the APNs emulator on loopback; then the same load sent straight
// to the emulator over HTTP/2 as the ceiling. Bounded in time; stops by itself.
//
// Environment: BENCH_SECONDS (20), BENCH_CONNECTIONS (64), BENCH_POOL (2, or BENCH_EVENT_LOOPS when
// more), BENCH_EVENT_LOOPS (the relay's EVENT_LOOPS; unset: one per CPU it may use), RELAY_BINARY
// (.build/release/apns-relay), BENCH_LOG_LEVELS (info,warning: one relay phase per level),
// BENCH_SKIP_CEILING (1: the relay phases only, for profiling), BENCH_SKIP_HOLD (1: no hold
// scenario), BENCH_HOLD_MILLION (1: the hold scenario also holds a million pushes, about 100 s).
// Every relay runs with a STORE_PATH of its own in the bench's temporary directory, so holding is
// on as in production; with Apple up the store stays unopened.
// `relay-bench slow-bodies` runs the slow-body memory measurement instead (SlowBodies.swift).
import Foundation
import Synchronization
import MockAPNs
import OpenSSLSupport
import EventLoop
import BenchSupport
import CertificateSupport

let keyID = "BENCHKEY01"
let teamID = "BENCHTEAM1"
let topic = "com.example.app"

/// What a relay phase found besides the load numbers.
struct RelayFindings {
    /// The relay's LOG_LEVEL in this phase: `info` writes a line per push, `warning` none.
    var logLevel = "warning"
    var load: LoadResult?
    var lost = 0
    var peakRSSKiB: Int?
    /// Resident set once healthy (connections to the emulator open), before any load.
    var idleRSSKiB: Int?
    /// Pushes that went out on another loop's APNs connection (relay_apns_cross_loop_pushes_total).
    var crossLoopPushes: Int?
    /// The idle resident set split: anonymous (heap, stacks, buffers: what the relay costs) and
    /// file-backed (the binary's read-only pages, shared with any other process mapping it).
    var idleAnonKiB: Int?
    var idleFileKiB: Int?
    /// The largest anonymous resident set seen while the load ran (sampled every 50 ms; the
    /// kernel keeps a peak only for the whole resident set, VmHWM, file pages included).
    var peakAnonKiB: Int?
    var cpuSeconds: Double?
    var benchCPUSeconds: Double?
    var exitStatus: Int32?
    var exitSeconds: Double?
    var terminated = false
    var logLines: [Substring] = []
    var failure: String?
}

/// CPU seconds used by this process so far (the generator and the emulator).
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

func runRelayPhase(settings: BenchSettings, logLevel: String, emulatorPort: Int, directory: URL, delivered: DeliveredIDs,
                   variants: [PushVariant]) -> RelayFindings {
    var findings = RelayFindings()
    findings.logLevel = logLevel
    let binary = relayBinary()
    guard FileManager.default.isExecutableFile(atPath: binary.path) else {
        findings.failure = "\(binary.path) is missing; build it with swift build -c release --product apns-relay (make bench does)"
        return findings
    }
    let relay: RelayProcess
    do {
        let port = try freeLoopbackPort()
        relay = try RelayProcess(binary: binary, environment: relayEnvironment(
            directory: directory, emulatorPort: emulatorPort, port: port, pool: settings.pool, logLevel: logLevel,
            eventLoops: settings.eventLoops, storePath: directory.appendingPathComponent("held-\(logLevel).sqlite").path),
            port: port, logURL: directory.appendingPathComponent("relay-\(logLevel).log"))
    } catch {
        findings.failure = "could not start \(binary.path) serve: \(error)"
        return findings
    }
    // Only what a healthy run should not have: an `info` relay writes a line per push.
    defer { findings.logLines = relay.logLines().filter { !$0.contains(#""level":"info""#) && !$0.contains(" info [") } }
    do {
        try relay.waitUntilHealthy(timeout: 20)
        // Healthy means the pool is connecting; give it a moment to settle before reading RSS.
        usleep(500_000)
        findings.idleRSSKiB = relay.rssKiB()
        findings.idleAnonKiB = relay.rssAnonKiB()
        findings.idleFileKiB = relay.rssFileKiB()
        let sampler = PeakSampler(relay)
        let cpuBefore = relay.cpuSeconds()
        let ownBefore = ownCPUSeconds()
        let load = try runHTTP1Load(port: relay.port, settings: settings, variants: variants)
        let cpuAfter = relay.cpuSeconds()
        findings.peakAnonKiB = sampler.stop()
        findings.benchCPUSeconds = ownCPUSeconds() - ownBefore
        if let before = cpuBefore, let after = cpuAfter { findings.cpuSeconds = after - before }
        // The emulator records a push just after answering it; give the last ones a moment.
        usleep(300_000)
        if case .success(let page) = httpGet(port: relay.port, path: "/metrics") {
            let text = String(decoding: page.body, as: UTF8.self)
            findings.crossLoopPushes = text.split(separator: "\n")
                .first { $0.hasPrefix("relay_apns_cross_loop_pushes_total ") }
                .flatMap { Int($0.split(separator: " ").last ?? "") }
        }
        findings.lost = delivered.missing(load.acceptedIDs)
        findings.load = load
    } catch {
        findings.failure = "\(error)"
    }
    findings.peakRSSKiB = relay.peakRSSKiB()
    let stopStart = Date()
    findings.exitStatus = relay.terminate(timeout: 10)
    findings.exitSeconds = Date().timeIntervalSince(stopStart)
    findings.terminated = true
    return findings
}

/// Polls the relay's anonymous resident set every 50 ms on a thread of its own until `stop()`,
/// keeping the largest value seen.
final class PeakSampler: Sendable {
    private let peak = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)

    init(_ relay: RelayProcess) {
        let pid = relay.pid
        let thread = Thread { [self] in
            while running.load(ordering: .relaxed) {
                if let kib = anonKiB(pid: pid), kib > peak.load(ordering: .relaxed) { peak.store(kib, ordering: .relaxed) }
                usleep(50_000)
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops the polling; the peak in KiB, nil when nothing could be read.
    func stop() -> Int? {
        running.store(false, ordering: .relaxed)
        finished.wait()
        let kib = peak.load(ordering: .relaxed)
        return kib > 0 ? kib : nil
    }
}

/// RssAnon of `pid` from /proc, in KiB.
private func anonKiB(pid: Int32) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("RssAnon:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }
    return nil
}

/// `apns-relay serve`'s environment: the emulator as both APNs hosts, its CA, the bench's key.
/// glibc's MALLOC_* tunables in the bench's own environment pass through, for profiling.
func relayEnvironment(directory: URL, emulatorPort: Int, port: Int, pool: Int, logLevel: String = "warning",
                      eventLoops: Int? = nil, storePath: String? = nil) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("MALLOC_") }
    environment.merge([
        "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        "APNS_AUTH_KEY_FILE": directory.appendingPathComponent("AuthKey_\(keyID).p8").path,
        "APNS_KEY_ID": keyID,
        "APPLE_TEAM_ID": teamID,
        "TOPIC": topic,
        "CONNECTION_POOL_SIZE": String(pool),
        "PORT": String(port),
        "BIND_ADDRESS": "127.0.0.1",
        "APNS_HOST": "localhost:\(emulatorPort)",
        "APNS_SANDBOX_HOST": "localhost:\(emulatorPort)",
        "APNS_CA_FILE": directory.appendingPathComponent("emulator-ca.pem").path,
        "LOG_LEVEL": logLevel,
    ]) { $1 }
    if let eventLoops { environment["EVENT_LOOPS"] = String(eventLoops) }
    if let storePath { environment["STORE_PATH"] = storePath }
    return environment
}

/// The APNs emulator the relay talks to, its CA and the bench's key written to `directory`;
/// every push it accepts goes into `delivered`.
func startEmulator(directory: URL, delivered: DeliveredIDs) throws -> (ES256PrivateKey, MockAPNsServer) {
    // Two loops, so the ceiling phase is not one thread's worth of "Apple"; more would only
    // take CPU from the relay on a small machine.
    let emulatorLoops = min(2, System.coreCount)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let key = try ES256PrivateKey.generate()
    let certificates = try TestCertificates.make()
    try certificates.caPEM.write(to: directory.appendingPathComponent("emulator-ca.pem"), atomically: true, encoding: .utf8)
    try key.pemPKCS8.write(to: directory.appendingPathComponent("AuthKey_\(keyID).p8"), atomically: true, encoding: .utf8)
    // Each phase is a new relay process with the same key, and the ceiling signs a token of its
    // own: Apple's rule of one new token per key every 20 minutes is off here. The bench measures
    // speed; the tests and `make soak` hold the relay to that rule.
    let configuration = MockAPNsConfiguration(topics: [topic], teamID: teamID, keys: [keyID: .es256(key.publicKey)],
                                              faults: .none, providerTokenUpdateInterval: 0)
    let emulator = try MockAPNsServer.start(configuration: configuration, host: "127.0.0.1", certificates: certificates,
                                            loopCount: emulatorLoops, onRecord: { record in
        // Every push "Apple" accepted, by apns-id, to find 201s that never reached it.
        if record.status == 200, let id = record.apnsID, let number = uuidKey(id.utf8) {
            delivered.insert(number)
        }
    })
    return (key, emulator)
}

func run() -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    installInterruptHandlers()
    let settings: BenchSettings
    do {
        settings = try BenchSettings.fromEnvironment()
    } catch {
        FileHandle.standardError.write(Data("relay-bench: \(error)\n".utf8))
        return 2
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-bench-\(getpid())")
    defer { try? FileManager.default.removeItem(at: directory) }

    let key: ES256PrivateKey
    let emulator: MockAPNsServer
    let delivered = DeliveredIDs()
    do {
        (key, emulator) = try startEmulator(directory: directory, delivered: delivered)
    } catch {
        FileHandle.standardError.write(Data("relay-bench: could not start the APNs emulator: \(error)\n".utf8))
        return 2
    }
    defer { emulator.stop() }
    let variants: [PushVariant]
    do {
        variants = try PushVariant.make(count: 8)
    } catch {
        FileHandle.standardError.write(Data("relay-bench: could not encrypt the sample pushes: \(error)\n".utf8))
        return 2
    }

    print("relay-bench: \(fixed(settings.seconds, 0)) s per phase after \(fixed(settings.warmup, 1)) s warm-up, "
          + "\(settings.connections) connections, pool \(settings.pool), emulator on 127.0.0.1:\(emulator.port)")
    // The default LOG_LEVEL (a line per push) and `warning` (no line for a delivered push): the
    // difference is what logging costs.
    var phases: [RelayFindings] = []
    for level in settings.logLevels {
        print("phase \(phases.count + 1): \(settings.connections) HTTP/1.1 clients -> apns-relay serve (LOG_LEVEL=\(level)) -> emulator …")
        let findings = runRelayPhase(settings: settings, logLevel: level, emulatorPort: emulator.port, directory: directory,
                                     delivered: delivered, variants: variants)
        if let failure = findings.failure { print("phase \(phases.count + 1) failed: \(failure)") }
        phases.append(findings)
    }
    let binary = relayBinary()
    let binaryBytes = (try? FileManager.default.attributesOfItem(atPath: binary.path)[.size] as? Int) ?? nil

    var ceiling: LoadResult?
    var ceilingFailure: String?
    var ceilingCPU: Double?
    if !settings.skipCeiling {
        print("phase \(phases.count + 1) (ceiling): \(settings.connections) streams on \(min(settings.pool, settings.connections)) HTTP/2 connections -> emulator …")
        do {
            let token = try makeProviderToken(key: key, keyID: keyID, teamID: teamID, issuedAt: Int64(Date().timeIntervalSince1970))
            let ownBefore = ownCPUSeconds()
            ceiling = try runCeilingLoad(port: emulator.port, caPEM: emulator.caPEM, providerToken: token, topic: topic,
                                         settings: settings, variants: variants)
            ceilingCPU = ownCPUSeconds() - ownBefore
        } catch {
            ceilingFailure = "\(error)"
            print("phase 2 failed: \(error)")
        }
    }

    var hold: HoldFindings?
    if !settings.skipHold {
        print("phase \(phases.count + (settings.skipCeiling ? 1 : 2)) (hold): emulator stopped, \(settings.connections) HTTP/1.1 clients "
              + "-> apns-relay serve (\(settings.redisStore ? "STORE_URL: redis-server, appendfsync always" : "STORE_PATH")) for \(fixed(settings.seconds + holdLead, 0)) s, then the emulator back"
              + (settings.holdMillion ? ", then away again until a million are held" : "") + " …")
        hold = runHoldScenario(settings: settings, emulator: emulator, directory: directory, delivered: delivered, variants: variants)
    }

    printReport(settings: settings, phases: phases, ceiling: ceiling, ceilingCPU: ceilingCPU, binaryBytes: binaryBytes)
    if let hold { printHoldReport(hold, settings: settings) }
    for relay in phases {
        if let error = relay.load?.firstError { print("relay phase (LOG_LEVEL=\(relay.logLevel)), first error: \(error)") }
    }
    if let error = ceiling?.firstError { print("ceiling phase, first error: \(error)") }
    for relay in phases where !relay.logLines.isEmpty {
        print("relay log (LOG_LEVEL=\(relay.logLevel)): \(relay.logLines.count) lines at warning or above; first ones:")
        for line in relay.logLines.prefix(3) { print("  " + line.prefix(300)) }
    }
    printJSON(settings: settings, phases: phases, ceiling: ceiling, binaryBytes: binaryBytes, hold: hold)
    if phases.contains(where: { $0.failure != nil || $0.lost > 0 }) || ceilingFailure != nil { return 1 }
    if let hold, !holdFailures(hold).isEmpty { return 1 }
    return 0
}

func relayBinary() -> URL {
    URL(fileURLWithPath: ProcessInfo.processInfo.environment["RELAY_BINARY"] ?? ".build/release/apns-relay")
}

func printReport(settings: BenchSettings, phases: [RelayFindings], ceiling: LoadResult?, ceilingCPU: Double?, binaryBytes: Int?) {
    let cl = ceiling.map { LatencySummary($0.latencies) }
    let na = "n/a"
    // One column per relay phase, then the ceiling.
    var rows: [[String]] = []
    func row(_ name: String, _ relay: (RelayFindings) -> String?, _ ceilingValue: String?) {
        rows.append([name] + phases.map { relay($0) ?? na } + [ceilingValue ?? na])
    }
    func latency(_ f: RelayFindings, _ pick: (LatencySummary) -> Double) -> String? {
        f.load.map { fixed(pick(LatencySummary($0.latencies)), 2) }
    }
    rows.append([""] + phases.map { "relay, LOG_LEVEL=\($0.logLevel)" } + ["ceiling"])
    rows.append(["path"] + phases.map { _ in "HTTP/1.1 -> relay -> h2" } + ["h2 straight to emulator"])
    row("pushes/s", { $0.load.map { fixed($0.pushesPerSecond, 0) } }, ceiling.map { fixed($0.pushesPerSecond, 0) })
    row("ratio to the ceiling", { f in ratioToCeiling(f, ceiling).map { fixed($0, 2) } }, ceiling == nil ? nil : "1.00")
    row("p50 latency (ms)", { latency($0, \.p50) }, cl.map { fixed($0.p50, 2) })
    row("p99 latency (ms)", { latency($0, \.p99) }, cl.map { fixed($0.p99, 2) })
    row("p99.9 latency (ms)", { latency($0, \.p999) }, cl.map { fixed($0.p999, 2) })
    row("max latency (ms)", { latency($0, \.max) }, cl.map { fixed($0.max, 2) })
    row("pushes measured", { $0.load.map { String(LatencySummary($0.latencies).count) } }, cl.map { String($0.count) })
    row("answers not 201 / not 200", { $0.load.map { nonSuccessText($0, success: 201) } }, ceiling.map { nonSuccessText($0, success: 200) })
    row("connection/stream errors", { $0.load.map { String($0.connectionErrors) } }, ceiling.map { String($0.connectionErrors) })
    row("pushes unanswered", { $0.load.map { String($0.unanswered) } }, ceiling.map { String($0.unanswered) })
    row("201s checked / lost", { f in f.load.map { "\($0.acceptedIDs.count) / \(f.lost)" + ($0.successWithoutID > 0 ? " (+\($0.successWithoutID) without apns-id)" : "") } }, nil)
    row("relay CPU per push (µs)", { relayCPUPerPush($0).map { fixed($0, 1) } }, nil)
    row("pushes crossing loops (%)", { f in
        guard let crossed = f.crossLoopPushes, let load = f.load, load.acceptedIDs.count > 0 else { return nil }
        return fixed(100 * Double(crossed) / Double(load.acceptedIDs.count), 1)
    }, nil)
    row("relay CPU s during load", { $0.cpuSeconds.map { fixed($0, 1) } }, nil)
    row("relay idle RSS (MiB)", { $0.idleRSSKiB.map { fixed(Double($0) / 1024, 1) } }, nil)
    row("relay peak RSS (MiB)", { $0.peakRSSKiB.map { fixed(Double($0) / 1024, 1) } }, nil)
    row("  idle anon / file (MiB)", { f in f.idleAnonKiB.map { a in fixed(Double(a) / 1024, 1) + " / " + (f.idleFileKiB.map { fixed(Double($0) / 1024, 1) } ?? na) } }, nil)
    row("  peak anon, sampled (MiB)", { $0.peakAnonKiB.map { fixed(Double($0) / 1024, 1) } }, nil)
    row("relay binary (MB)", { _ in binaryBytes.map { fixed(Double($0) / 1_000_000, 1) } }, nil)
    row("load generator CPU s", { $0.load.map { fixed($0.generatorCPUSeconds, 1) } }, ceiling.map { fixed($0.generatorCPUSeconds, 1) })
    row("bench process CPU s (all)", { $0.benchCPUSeconds.map { fixed($0, 1) } }, ceilingCPU.map { fixed($0, 1) })
    row("relay SIGTERM -> exit", { sigtermText($0) }, nil)
    let columns = rows[0].count
    let widths = (0..<columns).map { c in rows.map { $0[c].count }.max()! }
    print("")
    for (i, cells) in rows.enumerated() {
        var line = cells[0].padding(toLength: widths[0], withPad: " ", startingAt: 0)
        for c in 1..<columns { line += "  " + String(repeating: " ", count: widths[c] - cells[c].count) + cells[c] }
        print(line)
        if i == 1 { print(String(repeating: "-", count: widths.reduce(0, +) + 2 * (columns - 1))) }
    }
    if let info = phases.first(where: { $0.logLevel == "info" }).flatMap(relayCPUPerPush),
       let warning = phases.first(where: { $0.logLevel == "warning" }).flatMap(relayCPUPerPush) {
        print("logging a line per push costs \(fixed(info - warning, 1)) µs of relay CPU per push (noisy: two separate runs)")
    }
    print("")
}

func ratioToCeiling(_ relay: RelayFindings, _ ceiling: LoadResult?) -> Double? {
    guard let load = relay.load, let ceiling, ceiling.pushesPerSecond > 0 else { return nil }
    return load.pushesPerSecond / ceiling.pushesPerSecond
}

func nonSuccessText(_ result: LoadResult, success: Int) -> String {
    let others = result.statusCounts.filter { $0.key != success }.sorted { $0.key < $1.key }
    let total = others.reduce(0) { $0 + $1.value }
    if total == 0 { return "0" }
    return "\(total) (" + others.map { "\($0.key)×\($0.value)" }.joined(separator: " ") + ")"
}

func relayCPUPerPush(_ relay: RelayFindings) -> Double? {
    guard let cpu = relay.cpuSeconds, let load = relay.load else { return nil }
    let answered = load.statusCounts.values.reduce(0, +)
    return answered > 0 ? cpu / Double(answered) * 1e6 : nil
}

func sigtermText(_ relay: RelayFindings) -> String {
    guard relay.terminated else { return "n/a" }
    guard let status = relay.exitStatus else { return "no exit in 10 s (killed)" }
    return "status \(status) in \(fixed(relay.exitSeconds ?? .nan, 2)) s"
}

/// One JSON line: the `LOG_LEVEL=warning` phase under the historical keys (comparable with older
/// runs), the `info` phase under `info_`-prefixed ones, then what both share.
func printJSON(settings: BenchSettings, phases: [RelayFindings], ceiling: LoadResult?, binaryBytes: Int?, hold: HoldFindings?) {
    let cl = ceiling.map { LatencySummary($0.latencies) }
    func int(_ v: Int?) -> String { v.map(String.init) ?? "null" }
    func relayFields(_ relay: RelayFindings, prefix: String) -> [(String, String)] {
        let rl = relay.load.map { LatencySummary($0.latencies) }
        var fields: [(String, String)] = [
            ("relay_pushes_per_s", jsonNumber(relay.load?.pushesPerSecond ?? .nan, 1)),
            ("ratio_to_ceiling", jsonNumber(ratioToCeiling(relay, ceiling) ?? .nan, 3)),
            ("p50_ms", jsonNumber(rl?.p50 ?? .nan, 3)),
            ("p99_ms", jsonNumber(rl?.p99 ?? .nan, 3)),
            ("p999_ms", jsonNumber(rl?.p999 ?? .nan, 3)),
            ("max_ms", jsonNumber(rl?.max ?? .nan, 3)),
            ("pushes", int(rl?.count)),
            ("non_201", int(relay.load?.answers(otherThan: 201))),
            ("errors", int(relay.load.map { $0.connectionErrors })),
            ("unanswered", int(relay.load.map { $0.unanswered })),
            ("lost", relay.load == nil ? "null" : String(relay.lost)),
            ("relay_idle_rss_kib", int(relay.idleRSSKiB)),
            ("relay_peak_rss_kib", int(relay.peakRSSKiB)),
            ("relay_idle_anon_kib", int(relay.idleAnonKiB)),
            ("relay_idle_file_kib", int(relay.idleFileKiB)),
            ("relay_peak_anon_kib", int(relay.peakAnonKiB)),
            ("relay_cpu_s", jsonNumber(relay.cpuSeconds ?? .nan, 2)),
            ("relay_cpu_us_per_push", jsonNumber(relayCPUPerPush(relay) ?? .nan, 1)),
            ("relay_cross_loop_pushes", int(relay.crossLoopPushes)),
            ("bench_cpu_s", jsonNumber(relay.benchCPUSeconds ?? .nan, 2)),
            ("generator_cpu_s", jsonNumber(relay.load?.generatorCPUSeconds ?? .nan, 2)),
            ("sigterm_exit_status", relay.terminated ? int(relay.exitStatus.map(Int.init)) : "null"),
            ("sigterm_exit_0_within_10s", relay.terminated ? (relay.exitStatus == 0 ? "true" : "false") : "null"),
        ]
        if let failure = relay.failure {
            fields.append(("relay_failure", "\"" + failure.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: " ") + "\""))
        }
        return fields.map { (prefix + $0.0, $0.1) }
    }
    var fields: [(String, String)] = []
    for relay in phases {
        fields += relayFields(relay, prefix: relay.logLevel == "warning" ? "" : relay.logLevel + "_")
    }
    fields += [
        ("relay_binary_bytes", int(binaryBytes)),
        ("ceiling_pushes_per_s", jsonNumber(ceiling?.pushesPerSecond ?? .nan, 1)),
        ("ceiling_p50_ms", jsonNumber(cl?.p50 ?? .nan, 3)),
        ("ceiling_p99_ms", jsonNumber(cl?.p99 ?? .nan, 3)),
        ("ceiling_non_200", int(ceiling?.answers(otherThan: 200))),
        ("seconds", jsonNumber(settings.seconds, 1)),
        ("connections", String(settings.connections)),
        ("pool", String(settings.pool)),
    ]
    if let hold {
        fields += [
            ("held_pushes_per_s", jsonNumber(hold.load?.heldPerSecond ?? .nan, 1)),
            ("held_pushes_per_s_at_once", jsonNumber(hold.load?.atOnce.perSecond ?? .nan, 1)),
            ("held_cpu_us_per_push", jsonNumber(hold.cpuSeconds.flatMap { cpu in
                hold.load.map { cpu / Double(max(1, $0.statusCounts.values.reduce(0, +))) * 1e6 } } ?? .nan, 1)),
            ("held_not_201_held", int(hold.load.map { $0.statusCounts.values.reduce(0, +) - $0.held })),
            ("held_drain_per_s", jsonNumber(hold.drainPerSecond ?? .nan, 1)),
            ("held_first_delivery_s", jsonNumber(hold.firstDelivery ?? .nan, 1)),
            ("held_lost", int(hold.lost)),
            ("held_delivered_twice", String(hold.repeats)),
        ]
        if let m = hold.million {
            fields += [
                ("million_held", String(m.load.held)),
                ("million_rss_before_kib", int(m.before.rss)), ("million_anon_before_kib", int(m.before.anon)),
                ("million_rss_after_kib", int(m.after.rss)), ("million_anon_after_kib", int(m.after.anon)),
                ("million_store_bytes", int(m.after.storeBytes)),
            ]
        }
    }
    print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
}

exit(CommandLine.arguments.dropFirst().first == "slow-bodies" ? runSlowBodies() : run())
