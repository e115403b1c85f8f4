// relay-bench: how many Mastodon-shaped pushes per second the relay turns into APNs requests, at
// what latency and cost, against the APNs emulator on loopback; then the same load sent straight
// to the emulator over HTTP/2 as the ceiling. Bounded in time; stops by itself.
//
// Environment: BENCH_SECONDS (20), BENCH_CONNECTIONS (64), BENCH_POOL (2), RELAY_BINARY
// (.build/release/apns-relay), BENCH_SKIP_CEILING (1: the relay phase only, for profiling).
import Foundation
import Synchronization
import MockAPNs
import OpenSSLSupport
import EventLoop

let keyID = "BENCHKEY01"
let teamID = "BENCHTEAM1"
let topic = "com.example.app"

/// What the relay phase found besides the load numbers.
struct RelayFindings {
    var load: LoadResult?
    var lost = 0
    var peakRSSKiB: Int?
    var cpuSeconds: Double?
    var benchCPUSeconds: Double?
    var exitStatus: Int32?
    var exitSeconds: Double?
    var terminated = false
    var logLines: [Substring] = []
    var failure: String?
}

/// The apns-id of every push the emulator accepted, filled on its loop, read after a phase.
final class DeliveredIDs: Sendable {
    let ids = Mutex<Set<UInt128>>([])
}

/// CPU seconds used by this process so far (the generator and the emulator).
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

func runRelayPhase(settings: BenchSettings, emulatorPort: Int, directory: URL, delivered: DeliveredIDs,
                   variants: [PushVariant]) -> RelayFindings {
    var findings = RelayFindings()
    let environment = ProcessInfo.processInfo.environment
    let binary = URL(fileURLWithPath: environment["RELAY_BINARY"] ?? ".build/release/apns-relay")
    guard FileManager.default.isExecutableFile(atPath: binary.path) else {
        findings.failure = "\(binary.path) is missing; build it with swift build -c release --product apns-relay (make bench does)"
        return findings
    }
    let relay: RelayProcess
    do {
        let port = try freeLoopbackPort()
        relay = try RelayProcess(binary: binary, environment: [
            "PATH": environment["PATH"] ?? "/usr/bin:/bin",
            "APNS_AUTH_KEY_FILE": directory.appendingPathComponent("AuthKey_\(keyID).p8").path,
            "APNS_KEY_ID": keyID,
            "APPLE_TEAM_ID": teamID,
            "TOPIC": topic,
            "CONNECTION_POOL_SIZE": String(settings.pool),
            "PORT": String(port),
            "BIND_ADDRESS": "127.0.0.1",
            "APNS_HOST": "localhost:\(emulatorPort)",
            "APNS_SANDBOX_HOST": "localhost:\(emulatorPort)",
            "APNS_CA_FILE": directory.appendingPathComponent("emulator-ca.pem").path,
            "LOG_LEVEL": environment["BENCH_LOG_LEVEL"] ?? "warning",
        ], port: port, logURL: directory.appendingPathComponent("relay.log"))
    } catch {
        findings.failure = "could not start \(binary.path) serve: \(error)"
        return findings
    }
    defer { findings.logLines = relay.logLines() }
    do {
        try relay.waitUntilHealthy(timeout: 20)
        let cpuBefore = relay.cpuSeconds()
        let ownBefore = ownCPUSeconds()
        let load = try runHTTP1Load(port: relay.port, settings: settings, variants: variants)
        let cpuAfter = relay.cpuSeconds()
        findings.benchCPUSeconds = ownCPUSeconds() - ownBefore
        if let before = cpuBefore, let after = cpuAfter { findings.cpuSeconds = after - before }
        // The emulator records a push just after answering it; give the last ones a moment.
        usleep(300_000)
        findings.lost = delivered.ids.withLock { set in load.acceptedIDs.reduce(0) { $0 + (set.contains($1) ? 0 : 1) } }
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
    // Two loops, so the ceiling phase is not one thread's worth of "Apple"; more would only
    // take CPU from the relay on a small machine.
    let emulatorLoops = min(2, System.coreCount)
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        key = try ES256PrivateKey.generate()
        let certificates = try TestCertificates.make()
        try certificates.caPEM.write(to: directory.appendingPathComponent("emulator-ca.pem"), atomically: true, encoding: .utf8)
        try key.pemPKCS8.write(to: directory.appendingPathComponent("AuthKey_\(keyID).p8"), atomically: true, encoding: .utf8)
        let configuration = MockAPNsConfiguration(topics: [topic], teamID: teamID, keys: [keyID: .es256(key.publicKey)],
                                                  faults: .none)
        emulator = try MockAPNsServer.start(configuration: configuration, host: "127.0.0.1", certificates: certificates,
                                            loopCount: emulatorLoops, onRecord: { record in
            // Every push "Apple" accepted, by apns-id, to find 201s that never reached it.
            if record.status == 200, let id = record.apnsID, let number = uuidKey(id.utf8) {
                _ = delivered.ids.withLock { $0.insert(number) }
            }
        })
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
    print("phase 1: \(settings.connections) HTTP/1.1 clients -> apns-relay serve -> emulator …")
    let relay = runRelayPhase(settings: settings, emulatorPort: emulator.port, directory: directory,
                              delivered: delivered, variants: variants)
    if let failure = relay.failure { print("phase 1 failed: \(failure)") }

    var ceiling: LoadResult?
    var ceilingFailure: String?
    var ceilingCPU: Double?
    if !settings.skipCeiling {
        print("phase 2 (ceiling): \(settings.connections) streams on \(min(settings.pool, settings.connections)) HTTP/2 connections -> emulator …")
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

    printReport(settings: settings, relay: relay, ceiling: ceiling, ceilingCPU: ceilingCPU)
    if let error = relay.load?.firstError { print("relay phase, first error: \(error)") }
    if let error = ceiling?.firstError { print("ceiling phase, first error: \(error)") }
    if !relay.logLines.isEmpty {
        print("relay log: \(relay.logLines.count) lines at warning or above; first ones:")
        for line in relay.logLines.prefix(3) { print("  " + line.prefix(300)) }
    }
    printJSON(settings: settings, relay: relay, ceiling: ceiling)
    if relay.failure != nil || ceilingFailure != nil || relay.lost > 0 { return 1 }
    return 0
}

func printReport(settings: BenchSettings, relay: RelayFindings, ceiling: LoadResult?, ceilingCPU: Double?) {
    let r = relay.load
    let rl = r.map { LatencySummary($0.latencies) }
    let cl = ceiling.map { LatencySummary($0.latencies) }
    let na = "n/a"
    var rows: [(String, String, String)] = []
    rows.append(("", "relay", "ceiling"))
    rows.append(("path", "HTTP/1.1 -> relay -> h2", "h2 straight to emulator"))
    rows.append(("pushes/s", r.map { fixed($0.pushesPerSecond, 0) } ?? na, ceiling.map { fixed($0.pushesPerSecond, 0) } ?? na))
    rows.append(("p50 latency (ms)", rl.map { fixed($0.p50, 2) } ?? na, cl.map { fixed($0.p50, 2) } ?? na))
    rows.append(("p99 latency (ms)", rl.map { fixed($0.p99, 2) } ?? na, cl.map { fixed($0.p99, 2) } ?? na))
    rows.append(("p99.9 latency (ms)", rl.map { fixed($0.p999, 2) } ?? na, cl.map { fixed($0.p999, 2) } ?? na))
    rows.append(("max latency (ms)", rl.map { fixed($0.max, 2) } ?? na, cl.map { fixed($0.max, 2) } ?? na))
    rows.append(("pushes measured", rl.map { String($0.count) } ?? na, cl.map { String($0.count) } ?? na))
    rows.append(("answers not 201 / not 200", r.map { nonSuccessText($0, success: 201) } ?? na,
                 ceiling.map { nonSuccessText($0, success: 200) } ?? na))
    rows.append(("connection/stream errors", r.map { String($0.connectionErrors) } ?? na, ceiling.map { String($0.connectionErrors) } ?? na))
    rows.append(("pushes unanswered", r.map { String($0.unanswered) } ?? na, ceiling.map { String($0.unanswered) } ?? na))
    rows.append(("201s checked / lost", r.map { "\($0.acceptedIDs.count) / \(relay.lost)" + ($0.successWithoutID > 0 ? " (+\($0.successWithoutID) without apns-id)" : "") } ?? na, na))
    rows.append(("relay peak RSS (MiB)", relay.peakRSSKiB.map { fixed(Double($0) / 1024, 1) } ?? na, na))
    rows.append(("relay CPU s during load", relay.cpuSeconds.map { fixed($0, 1) } ?? na, na))
    rows.append(("relay CPU per push (µs)", relayCPUPerPush(relay).map { fixed($0, 1) } ?? na, na))
    rows.append(("load generator CPU s", r.map { fixed($0.generatorCPUSeconds, 1) } ?? na, ceiling.map { fixed($0.generatorCPUSeconds, 1) } ?? na))
    rows.append(("bench process CPU s (all)", relay.benchCPUSeconds.map { fixed($0, 1) } ?? na, ceilingCPU.map { fixed($0, 1) } ?? na))
    rows.append(("relay SIGTERM -> exit", sigtermText(relay), na))
    let widths = (rows.map { $0.0.count }.max()!, rows.map { $0.1.count }.max()!, rows.map { $0.2.count }.max()!)
    print("")
    for (i, row) in rows.enumerated() {
        print(row.0.padding(toLength: widths.0, withPad: " ", startingAt: 0) + "  "
              + String(repeating: " ", count: widths.1 - row.1.count) + row.1 + "  "
              + String(repeating: " ", count: widths.2 - row.2.count) + row.2)
        if i == 1 { print(String(repeating: "-", count: widths.0 + widths.1 + widths.2 + 4)) }
    }
    print("")
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

func printJSON(settings: BenchSettings, relay: RelayFindings, ceiling: LoadResult?) {
    let rl = relay.load.map { LatencySummary($0.latencies) }
    let cl = ceiling.map { LatencySummary($0.latencies) }
    func int(_ v: Int?) -> String { v.map(String.init) ?? "null" }
    var fields: [(String, String)] = [
        ("relay_pushes_per_s", jsonNumber(relay.load?.pushesPerSecond ?? .nan, 1)),
        ("p50_ms", jsonNumber(rl?.p50 ?? .nan, 3)),
        ("p99_ms", jsonNumber(rl?.p99 ?? .nan, 3)),
        ("p999_ms", jsonNumber(rl?.p999 ?? .nan, 3)),
        ("max_ms", jsonNumber(rl?.max ?? .nan, 3)),
        ("pushes", int(rl?.count)),
        ("non_201", int(relay.load?.answers(otherThan: 201))),
        ("errors", int(relay.load.map { $0.connectionErrors })),
        ("unanswered", int(relay.load.map { $0.unanswered })),
        ("lost", relay.load == nil ? "null" : String(relay.lost)),
        ("relay_peak_rss_kib", int(relay.peakRSSKiB)),
        ("relay_cpu_s", jsonNumber(relay.cpuSeconds ?? .nan, 2)),
        ("relay_cpu_us_per_push", jsonNumber(relayCPUPerPush(relay) ?? .nan, 1)),
        ("bench_cpu_s", jsonNumber(relay.benchCPUSeconds ?? .nan, 2)),
        ("generator_cpu_s", jsonNumber(relay.load?.generatorCPUSeconds ?? .nan, 2)),
        ("sigterm_exit_status", relay.terminated ? int(relay.exitStatus.map(Int.init)) : "null"),
        ("sigterm_exit_0_within_10s", relay.terminated ? (relay.exitStatus == 0 ? "true" : "false") : "null"),
        ("ceiling_pushes_per_s", jsonNumber(ceiling?.pushesPerSecond ?? .nan, 1)),
        ("ceiling_p50_ms", jsonNumber(cl?.p50 ?? .nan, 3)),
        ("ceiling_p99_ms", jsonNumber(cl?.p99 ?? .nan, 3)),
        ("ceiling_non_200", int(ceiling?.answers(otherThan: 200))),
        ("seconds", jsonNumber(settings.seconds, 1)),
        ("connections", String(settings.connections)),
        ("pool", String(settings.pool)),
    ]
    if let failure = relay.failure {
        fields.append(("relay_failure", "\"" + failure.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: " ") + "\""))
    }
    print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
}

exit(run())
