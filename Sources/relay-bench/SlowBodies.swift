// relay-bench slow-bodies: what thousands of slow request bodies cost the relay in memory, and
// whether valid pushes still get through meanwhile. Release relay against the in-process APNs
// emulator, loopback only, bounded in time; it stops by itself and stops the relay.
//
// SLOW_CONNECTIONS (10000) clients each send a head with Content-Length: 65536 and 65,000 body
// bytes, then 1 byte every SLOW_TRICKLE_SECONDS (5), for SLOW_HOLD_SECONDS (30); a client the
// relay cuts is replaced, so the pressure holds. A valid push every 250 ms meanwhile. Then every
// client leaves and the relay's RSS is read for SLOW_AFTER_SECONDS (30). Fails when a push is
// not answered 201 or the peak RSS is over SLOW_MAX_PEAK_MIB (128).
import Foundation
import MockAPNs
import BenchSupport

struct SlowBodySettings {
    var connections: Int
    var holdSeconds: Double
    var trickleSeconds: Double
    var afterSeconds: Double
    var maxPeakMiB: Double
    let declaredLength = 65536
    let sentBeforeTrickle = 65000

    static func fromEnvironment() throws -> SlowBodySettings {
        let number = environmentNumber
        return SlowBodySettings(
            connections: Int(try number("SLOW_CONNECTIONS", 10_000, 1...15_000)),
            holdSeconds: try number("SLOW_HOLD_SECONDS", 30, 1...600),
            trickleSeconds: try number("SLOW_TRICKLE_SECONDS", 5, 0.1...60),
            afterSeconds: try number("SLOW_AFTER_SECONDS", 30, 1...600),
            maxPeakMiB: try number("SLOW_MAX_PEAK_MIB", 128, 1...65536))
    }
}

/// Raises this process's open-file limit to the hard limit; the relay it starts inherits it.
/// Returns the soft limit in force afterwards.
func raiseOpenFileLimit() -> Int {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    return Int(limit.rlim_cur)
}

/// A blocking loopback connection with `timeout` seconds for connect, send and receive.
func connectLoopback(port: Int, timeout: Double) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    if rc != 0 { close(fd); return nil }
    return fd
}

/// Valid pushes, one at a time on fresh connections, until told to stop; statuses counted.
final class PushProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var statuses: [Int: Int] = [:]
    private var maxLatency = 0.0
    private var stopped = false
    private let port: Int
    private let template: WebPushRequestTemplate

    init(port: Int, variants: [PushVariant]) {
        self.port = port
        template = WebPushRequestTemplate(token: makeDeviceToken(), host: "127.0.0.1", variants: variants)
    }

    /// One push; its status, or 0 when it got no answer within 10 s.
    func pushOnce(id: Int) -> Int {
        guard let fd = connectLoopback(port: port, timeout: 10) else { return 0 }
        defer { close(fd) }
        var request: [UInt8] = []
        template.write(id: id, into: &request)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return 0 }
        var buffer = [UInt8](repeating: 0, count: 64)
        var received = 0
        while received < 12 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + received, $0.count - received, 0) }
            if n <= 0 { return 0 }
            received += n
        }
        return Int(String(decoding: buffer[9..<12], as: UTF8.self)) ?? 0
    }

    func start(every interval: Double) {
        Thread { [self] in
            var id = 0
            while !lock.withLock({ stopped }) {
                let started = Date()
                let status = pushOnce(id: id)
                let latency = Date().timeIntervalSince(started)
                lock.withLock {
                    statuses[status, default: 0] += 1
                    maxLatency = max(maxLatency, latency)
                }
                id += 1
                usleep(UInt32(max(0, interval - latency) * 1e6))
            }
        }.start()
    }

    /// Stops after the push in progress; returns the counts by status and the slowest answer.
    func stop() -> ([Int: Int], Double) {
        lock.withLock { stopped = true }
        usleep(300_000)
        return lock.withLock { (statuses, maxLatency) }
    }
}

/// One slow client: its socket and how far it got.
private struct SlowClient {
    var fd: Int32
    var sent = 0
    var lastTrickle = 0.0
}

/// What the slow clients saw.
struct SlowLoadFindings {
    var opened = 0
    var connectFailures = 0
    var answered408 = 0
    var answeredOther = 0
    var closedWithoutAnswer = 0
    var heldAtEnd = 0
    var samples: [(Double, Int)] = []
}

/// Keeps `settings.connections` slow clients on the relay for `holdSeconds`, sampling its RSS.
func runSlowClients(port: Int, settings: SlowBodySettings, relay: RelayProcess) -> SlowLoadFindings {
    var findings = SlowLoadFindings()
    let head = Array("POST /push/\(makeDeviceToken())/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: aes128gcm\r\nContent-Length: \(settings.declaredLength)\r\n\r\n".utf8)
    let firstPart = head + [UInt8](repeating: 0x61, count: settings.sentBeforeTrickle)
    var clients: [SlowClient] = []
    clients.reserveCapacity(settings.connections)
    let start = Date()
    var lastCheck = 0.0, lastSample = -1.0
    var peek = [UInt8](repeating: 0, count: 16)
    while true {
        let now = Date().timeIntervalSince(start)
        if now >= settings.holdSeconds { break }
        // Top up to the target, a few hundred connects per turn so sends keep going.
        var opening = 0
        while clients.count < settings.connections && opening < 250 {
            opening += 1
            guard let fd = connectLoopback(port: port, timeout: 2) else { findings.connectFailures += 1; break }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            clients.append(SlowClient(fd: fd))
            findings.opened += 1
        }
        var index = 0
        while index < clients.count {
            var client = clients[index]
            var alive = true
            if client.sent < firstPart.count {
                let n = firstPart.withUnsafeBytes { send(client.fd, $0.baseAddress! + client.sent, $0.count - client.sent, Int32(MSG_NOSIGNAL)) }
                if n > 0 {
                    client.sent += n
                    if client.sent == firstPart.count { client.lastTrickle = now }
                } else if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK {
                    alive = false
                    findings.closedWithoutAnswer += 1
                }
            } else if now - client.lastTrickle >= settings.trickleSeconds
                        && client.sent < head.count + settings.declaredLength - 1 {
                var byte: UInt8 = 0x62
                if send(client.fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 {
                    client.sent += 1
                    client.lastTrickle = now
                }
            }
            if alive && now - lastCheck >= 1 {
                let n = peek.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n >= 12 {
                    alive = false
                    if String(decoding: peek[9..<12], as: UTF8.self) == "408" { findings.answered408 += 1 } else { findings.answeredOther += 1 }
                } else if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                    alive = false
                    findings.closedWithoutAnswer += 1
                }
            }
            if alive {
                clients[index] = client
                index += 1
            } else {
                close(client.fd)
                clients.swapAt(index, clients.count - 1)
                clients.removeLast()
            }
        }
        if now - lastCheck >= 1 { lastCheck = now }
        if now - lastSample >= 0.5, let rss = relay.rssKiB() {
            findings.samples.append((now, rss))
            lastSample = now
        }
        usleep(10_000)
    }
    findings.heldAtEnd = clients.count
    for client in clients { close(client.fd) }
    return findings
}

func runSlowBodies() -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    installInterruptHandlers()
    let settings: SlowBodySettings
    do {
        settings = try SlowBodySettings.fromEnvironment()
    } catch {
        FileHandle.standardError.write(Data("relay-bench slow-bodies: \(error)\n".utf8))
        return 2
    }
    let files = raiseOpenFileLimit()
    guard files >= settings.connections + 200 else {
        print("relay-bench slow-bodies: the open-file limit is \(files); SLOW_CONNECTIONS=\(settings.connections) needs \(settings.connections + 200) (raise ulimit -Hn)")
        return 2
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-bench-slow-\(getpid())")
    defer { try? FileManager.default.removeItem(at: directory) }
    let delivered = DeliveredIDs()
    let emulator: MockAPNsServer
    let variants: [PushVariant]
    do {
        emulator = try startEmulator(directory: directory, delivered: delivered).1
        variants = try PushVariant.make(count: 4)
    } catch {
        print("relay-bench slow-bodies: could not start the APNs emulator: \(error)")
        return 2
    }
    defer { emulator.stop() }
    let binary = URL(fileURLWithPath: ProcessInfo.processInfo.environment["RELAY_BINARY"] ?? ".build/release/apns-relay")
    guard FileManager.default.isExecutableFile(atPath: binary.path) else {
        print("relay-bench slow-bodies: \(binary.path) is missing; build it with swift build -c release --product apns-relay")
        return 2
    }
    let relay: RelayProcess
    do {
        let port = try freeLoopbackPort()
        var environment = relayEnvironment(directory: directory, emulatorPort: emulator.port, port: port, pool: 2)
        // Room for the probe's pushes beside the slow clients: the cap is not what is measured.
        environment["MAX_CONNECTIONS"] = String(settings.connections + 1000)
        relay = try RelayProcess(binary: binary, environment: environment, port: port,
                                 logURL: directory.appendingPathComponent("relay.log"))
        try relay.waitUntilHealthy(timeout: 20)
    } catch {
        print("relay-bench slow-bodies: could not start the relay: \(error)")
        return 2
    }
    defer { _ = relay.terminate(timeout: 10) }

    let probe = PushProbe(port: relay.port, variants: variants)
    var warmup: [Int: Int] = [:]
    for id in 0..<20 { warmup[probe.pushOnce(id: 1_000_000 + id), default: 0] += 1 }
    sleep(2)
    let baseline = relay.rssKiB() ?? 0
    print("relay-bench slow-bodies: \(settings.connections) clients × (Content-Length \(settings.declaredLength), "
          + "\(settings.sentBeforeTrickle) bytes, then 1 byte every \(fixed(settings.trickleSeconds, 1)) s) for "
          + "\(fixed(settings.holdSeconds, 0)) s; open-file limit \(files); warm-up pushes \(statusText(warmup))")
    let cpuBefore = relay.cpuSeconds()
    probe.start(every: 0.25)
    let load = runSlowClients(port: relay.port, settings: settings, relay: relay)
    let (pushes, slowest) = probe.stop()
    var cpu: Double?
    if let before = cpuBefore, let after = relay.cpuSeconds() { cpu = after - before }
    let peak = relay.peakRSSKiB() ?? 0
    var after: [(Double, Int)] = []
    let leftAt = Date()
    while Date().timeIntervalSince(leftAt) < settings.afterSeconds {
        sleep(1)
        if let rss = relay.rssKiB() { after.append((Date().timeIntervalSince(leftAt), rss)) }
    }
    var afterPushes: [Int: Int] = [:]
    for id in 0..<5 { afterPushes[probe.pushOnce(id: 2_000_000 + id), default: 0] += 1 }
    let finalRSS = after.last?.1 ?? 0
    func mib(_ kib: Int) -> String { fixed(Double(kib) / 1024, 1) + " MiB" }
    let rows: [(String, String)] = [
        ("relay RSS baseline (after warm-up)", mib(baseline)),
        ("relay RSS peak (VmHWM)", mib(peak)),
        ("relay RSS, highest sample under load", mib(load.samples.map(\.1).max() ?? 0)),
        ("relay RSS 5 s after the clients left", mib(after.first { $0.0 >= 5 }?.1 ?? 0)),
        ("relay RSS \(fixed(settings.afterSeconds, 0)) s after the clients left", mib(finalRSS)),
        ("slow connections opened", String(load.opened)),
        ("  answered 408 / other answer", "\(load.answered408) / \(load.answeredOther)"),
        ("  closed without an answer", String(load.closedWithoutAnswer)),
        ("  held at the end / connect failures", "\(load.heldAtEnd) / \(load.connectFailures)"),
        ("relay CPU s during the load", cpu.map { fixed($0, 1) } ?? "n/a"),
        ("valid pushes under load", statusText(pushes)),
        ("  slowest answer", fixed(slowest * 1000, 0) + " ms"),
        ("valid pushes after", statusText(afterPushes)),
    ]
    let width = rows.map(\.0.count).max() ?? 0
    print("")
    for row in rows { print(row.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + row.1) }
    print("")
    print("{\"baseline_rss_kib\":\(baseline),\"peak_rss_kib\":\(peak),\"after_rss_kib\":\(finalRSS),"
          + "\"opened\":\(load.opened),\"answered_408\":\(load.answered408),\"pushes_201\":\(pushes[201] ?? 0),"
          + "\"pushes_other\":\(pushes.filter { $0.key != 201 }.values.reduce(0, +))}")
    let pushesOK = pushes.keys.allSatisfy { $0 == 201 } && afterPushes.keys.allSatisfy { $0 == 201 }
    let peakOK = Double(peak) / 1024 <= settings.maxPeakMiB
    if !pushesOK { print("FAIL: a valid push was not answered 201") }
    if !peakOK { print("FAIL: peak RSS over SLOW_MAX_PEAK_MIB (\(fixed(settings.maxPeakMiB, 0)) MiB)") }
    return pushesOK && peakOK ? 0 : 1
}

/// "201×12 503×1", or "none".
func statusText(_ counts: [Int: Int]) -> String {
    counts.isEmpty ? "none" : counts.sorted { $0.key < $1.key }.map { "\($0.key == 0 ? "no answer" : String($0.key))×\($0.value)" }.joined(separator: " ")
}
