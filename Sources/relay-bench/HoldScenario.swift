// The hold scenario: Apple away (the emulator stopped, its port kept, so every connect is
// refused), Mastodon-shaped pushes to a device each; the relay answers 201 `X-Relay-Held: true`
// after the push is on disk. Then the emulator comes back and the relay delivers what it holds.
//
// A push does not always meet a refusal at once: while a reconnect attempt is due before the
// push's deadline (PUSH_TIMEOUT_MS, 8 s), the pool keeps it queued for that attempt (Apple may be
// back), and it is held only when the attempt fails. The back-off doubles from 1 s, so in the
// first 15 s or so of an outage, and for 8 s before each later attempt, every client waits.
// The load therefore runs `holdLead` seconds more than BENCH_SECONDS, and the report gives both
// the rate over the whole run and the rate in the seconds when every push was answered at once
// (what the store takes).
// With BENCH_HOLD_MILLION=1, Apple goes away again until a million pushes are held, and the
// relay's resident set is read before and after: the pushes are on disk, so it must stay flat.
import Foundation
import MockAPNs
import BenchSupport

/// What the hold scenario measured.
struct HoldFindings {
    var load: LoadResult?
    var cpuSeconds: Double?
    /// Held pushes delivered after the emulator came back; when the first and the last reached it
    /// (seconds after its restart: the first waits for the pool's next connect attempt, which its
    /// back-off may have put up to a minute away); the held 201s it never got, and repeats.
    var delivered = 0
    var firstDelivery: Double?
    var lastDelivery: Double?
    var drainPerSecond: Double? {
        guard let first = firstDelivery, let last = lastDelivery, last > first, delivered > 1 else { return nil }
        return Double(delivered - 1) / (last - first)
    }
    var lost: Int?
    var repeats = 0
    var rssBefore: Memory?
    var rssAfter: Memory?
    var million: MillionFindings?
    var failure: String?

    /// The resident set, whole and split (KiB), and the store's files on disk (bytes).
    struct Memory {
        var rss: Int?
        var anon: Int?
        var file: Int?
        var storeBytes: Int?
    }

    struct MillionFindings {
        var load: LoadResult
        var seconds: Double
        var before: Memory
        var after: Memory
        var peakAnon: Int?
    }
}

/// Seconds added to BENCH_SECONDS for the hold load: the back-off passes the push deadline.
let holdLead = 20.0
/// A second in which every answer came within this is one of "answered at once".
let atOnceNanos: UInt64 = 100_000_000

extension LoadResult {
    /// The median of the answers a second over the seconds in which every answer came within
    /// `atOnceNanos` (a median, as the seconds at the edges of a wait are partly idle), and how
    /// many such seconds of how many (the last, partial second left out).
    var atOnce: (perSecond: Double, seconds: Int, of: Int) {
        let whole = seconds.dropLast()
        let fast = whole.filter { $0.answers > 0 && $0.slowest <= atOnceNanos }.map(\.answers).sorted()
        return (fast.isEmpty ? .nan : Double(fast[fast.count / 2]), fast.count, whole.count)
    }
}

func runHoldScenario(settings: BenchSettings, emulator: MockAPNsServer, directory: URL, delivered: DeliveredIDs,
                     variants: [PushVariant]) -> HoldFindings {
    var findings = HoldFindings()
    let storePath = directory.appendingPathComponent("held-scenario.sqlite").path
    let relay: RelayProcess
    var redis: BenchRedis?
    defer { redis?.stop() }
    do {
        let port = try freeLoopbackPort()
        var environment = relayEnvironment(directory: directory, emulatorPort: emulator.port, port: port, pool: settings.pool,
                                           eventLoops: settings.eventLoops, storePath: settings.redisStore ? nil : storePath)
        if settings.redisStore {
            let server = try BenchRedis(directory: directory.appendingPathComponent("redis"))
            redis = server
            environment["STORE_URL"] = server.url
        }
        // Room for the million and what the clients still had in flight when it was reached.
        environment["HOLD_MAX_PUSHES"] = "2000000"
        relay = try RelayProcess(binary: relayBinary(), environment: environment, port: port,
                                 logURL: directory.appendingPathComponent("relay-hold.log"))
    } catch {
        findings.failure = "could not start the relay: \(error)"
        return findings
    }
    defer { _ = relay.terminate(timeout: 10) }
    func memory() -> HoldFindings.Memory {
        let bytes = ["", "-wal", "-shm"].reduce(0) { sum, suffix in
            sum + ((try? FileManager.default.attributesOfItem(atPath: storePath + suffix)[.size] as? Int) ?? 0)
        }
        return HoldFindings.Memory(rss: relay.rssKiB(), anon: relay.rssAnonKiB(), file: relay.rssFileKiB(), storeBytes: bytes)
    }
    do {
        try relay.waitUntilHealthy(timeout: 20)
        try takeAppleAway(emulator, relay: relay)
        findings.rssBefore = memory()
        let cpuBefore = relay.cpuSeconds()
        var longer = settings
        longer.seconds += holdLead
        let load = try runHTTP1Load(port: relay.port, settings: longer, variants: variants, tokenPerPush: true)
        if let before = cpuBefore, let after = relay.cpuSeconds() { findings.cpuSeconds = after - before }
        findings.load = load
        findings.rssAfter = memory()

        // Apple is back: the relay delivers what it holds, HOLD_DELIVERY_IN_FLIGHT at a time.
        let deliveredBefore = delivered.count
        let repeatsBefore = delivered.repeats
        let restartedAt = Date()
        try emulator.restart()
        // The pool's back-off is at most 60 s; then nothing new for 10 s means the rest is not coming.
        var first: Date?
        var last = (count: 0, at: restartedAt)
        while true {
            let now = delivered.count - deliveredBefore
            if now > last.count {
                if first == nil { first = Date() }
                last = (now, Date())
            }
            if now >= load.held { break }
            if first == nil ? Date().timeIntervalSince(restartedAt) > 75 : Date().timeIntervalSince(last.at) > 10 { break }
            usleep(5_000)
        }
        findings.delivered = last.count
        findings.firstDelivery = first.map { $0.timeIntervalSince(restartedAt) }
        findings.lastDelivery = first == nil ? nil : last.at.timeIntervalSince(restartedAt)
        findings.lost = delivered.missing(load.acceptedIDs)
        findings.repeats = delivered.repeats - repeatsBefore

        if settings.holdMillion {
            findings.million = try holdAMillion(settings: settings, emulator: emulator, relay: relay, variants: variants,
                                                memory: memory)
        }
    } catch {
        findings.failure = "\(error)"
    }
    return findings
}

/// Stops the emulator (its port kept: connects are refused) and waits until the relay has no
/// connection to it left (/ready answers 503), so every push of the load meets Apple away.
private func takeAppleAway(_ emulator: MockAPNsServer, relay: RelayProcess) throws {
    emulator.stop()
    let by = Date().addingTimeInterval(10)
    while Date() < by {
        if case .success(let status) = httpGetStatus(port: relay.port, path: "/ready"), status != 200 { return }
        usleep(50_000)
    }
    throw BenchError("the relay still answered /ready with 200 10 s after the emulator stopped")
}

/// Apple away again until a million pushes are held; the relay's memory before and after.
private func holdAMillion(settings: BenchSettings, emulator: MockAPNsServer, relay: RelayProcess, variants: [PushVariant],
                          memory: () -> HoldFindings.Memory) throws -> HoldFindings.MillionFindings {
    try takeAppleAway(emulator, relay: relay)
    // The last delivery's pages settle; then the "before".
    sleep(2)
    let before = memory()
    var bounded = settings
    bounded.seconds = 600
    let sampler = PeakSampler(relay)
    let started = Date()
    let load = try runHTTP1Load(port: relay.port, settings: bounded, variants: variants, tokenPerPush: true,
                                answerLimit: 1_000_000)
    let seconds = Date().timeIntervalSince(started)
    let peak = sampler.stop()
    sleep(2)
    let after = memory()
    try emulator.restart()
    return HoldFindings.MillionFindings(load: load, seconds: seconds, before: before, after: after, peakAnon: peak)
}

func printHoldReport(_ hold: HoldFindings, settings: BenchSettings) {
    let na = "n/a"
    func mib(_ kib: Int?) -> String { kib.map { fixed(Double($0) / 1024, 1) } ?? na }
    func split(_ m: HoldFindings.Memory?) -> String { m.map { "\(mib($0.rss)) (\(mib($0.anon)) / \(mib($0.file)))" } ?? na }
    var rows: [[String]] = [["Apple away (emulator stopped, connects refused)", "measured"]]
    let load = hold.load
    rows.append(["held pushes/s (201 X-Relay-Held), \(fixed(settings.seconds + holdLead, 0)) s of the outage",
                 load.map { fixed($0.heldPerSecond, 0) } ?? na])
    rows.append(["held pushes/s in the seconds answered at once (< 100 ms)", load.map { l in
        let a = l.atOnce
        return fixed(a.perSecond, 0) + " (\(a.seconds) of \(a.of) s)"
    } ?? na])
    rows.append(["p50 / p99 / max latency of a held push (ms)", load.map { l in
        let s = LatencySummary(l.latencies)
        return fixed(s.p50, 2) + " / " + fixed(s.p99, 2) + " / " + fixed(s.max, 0)
    } ?? na])
    rows.append(["answers not 201 held", load.map { l in
        let notHeld = l.statusCounts.values.reduce(0, +) - l.held
        return notHeld == 0 ? "0" : "\(notHeld) (" + l.statusCounts.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ") + ")"
    } ?? na])
    rows.append(["connection errors / unanswered", load.map { "\($0.connectionErrors) / \($0.unanswered)" } ?? na])
    rows.append(["relay CPU per held push (µs)", hold.cpuSeconds.flatMap { cpu in load.map { fixed(cpu / Double(max(1, $0.statusCounts.values.reduce(0, +))) * 1e6, 1) } } ?? na])
    rows.append(["held in all", load.map { String($0.held) } ?? na])
    rows.append(["RSS before / after holding (MiB: all (anon / file))", split(hold.rssBefore) + " -> " + split(hold.rssAfter)])
    rows.append(["store on disk after (MB)", hold.rssAfter?.storeBytes.map { fixed(Double($0) / 1e6, 1) } ?? na])
    rows.append(["drain: held pushes delivered/s (first to last)", hold.drainPerSecond.map { fixed($0, 0) } ?? na])
    rows.append(["drain: delivered of held", "\(hold.delivered) of \(load?.held ?? 0)"])
    rows.append(["drain: first / last delivered, s after Apple's return",
                 (hold.firstDelivery.map { fixed($0, 1) } ?? na) + " / " + (hold.lastDelivery.map { fixed($0, 1) } ?? na)])
    rows.append(["held 201s lost / delivered twice", "\(hold.lost.map(String.init) ?? na) / \(hold.repeats)"])
    if let m = hold.million {
        rows.append(["million: held, in (s), held/s", "\(m.load.held), \(fixed(m.seconds, 1)), \(fixed(Double(m.load.held) / m.seconds, 0))"])
        rows.append(["million: answers not 201 held", String(m.load.statusCounts.values.reduce(0, +) - m.load.held)])
        rows.append(["million: RSS before (MiB: all (anon / file))", split(m.before)])
        rows.append(["million: RSS after (MiB: all (anon / file))", split(m.after)])
        rows.append(["million: peak anon, sampled (MiB)", mib(m.peakAnon)])
        rows.append(["million: store on disk (MB)", m.after.storeBytes.map { fixed(Double($0) / 1e6, 1) } ?? na])
    } else {
        rows.append(["million held (BENCH_HOLD_MILLION=1)", "not run"])
    }
    let widths = (rows.map { $0[0].count }.max()!, rows.map { $0[1].count }.max()!)
    print("")
    for (i, cells) in rows.enumerated() {
        print(cells[0].padding(toLength: widths.0, withPad: " ", startingAt: 0) + "  "
              + String(repeating: " ", count: widths.1 - cells[1].count) + cells[1])
        if i == 0 { print(String(repeating: "-", count: widths.0 + widths.1 + 2)) }
    }
    if let load {
        print("answers per second from Apple's loss: " + load.seconds.map { String($0.answers) }.joined(separator: " "))
        print("held pushes/s answered at once \(load.atOnce.perSecond >= 10_000 ? "meet" : "DO NOT meet") the bound of 10,000/s")
    }
    for failure in holdFailures(hold) { print("hold scenario: \(failure)") }
    if let error = load?.firstError { print("hold scenario, first error: \(error)") }
    print("")
}

/// What the hold scenario got wrong: a push not answered 201 held, or not delivered exactly once.
/// (Its speed, at least 10,000 held a second, is a line of the report: on a shared machine it
/// says as much about the neighbours.)
func holdFailures(_ hold: HoldFindings) -> [String] {
    var failures: [String] = []
    if let failure = hold.failure { failures.append(failure) }
    guard let load = hold.load else { return failures.isEmpty ? ["no load ran"] : failures }
    if load.statusCounts.values.reduce(0, +) != load.held { failures.append("pushes answered other than 201 held") }
    if (hold.lost ?? 1) > 0 { failures.append("held pushes never delivered: \(hold.lost.map(String.init) ?? "unknown")") }
    if hold.repeats > 0 { failures.append("\(hold.repeats) pushes delivered twice") }
    if let m = hold.million, m.load.statusCounts.values.reduce(0, +) != m.load.held { failures.append("million: pushes answered other than 201 held") }
    return failures
}
