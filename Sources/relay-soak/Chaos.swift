// What goes wrong during the soak, on a schedule: Apple's bad days (GOAWAY, a restart, stream
// limits), hostile clients (idle and slow-body floods up to the connection cap) and the
// operator's key rotation (SIGHUP).
import Foundation
import Synchronization
import MockAPNs
import BenchSupport

enum ChaosEvent: String, CaseIterable {
    case goAwayBurst = "GOAWAY burst"
    case streamLimits = "MAX_CONCURRENT_STREAMS 1, 10, back"
    case routineGoAway = "graceful GOAWAY every 5 s"
    case keyRotation = "SIGHUP key rotation"
    case emulatorRestart = "emulator killed and restarted"
    case idleFlood = "idle flood to the connection cap"
    case slowBodyFlood = "slow-body flood to the connection cap"
    case goAwayStorm = "GOAWAY after every request"
}

/// The faults' effects the criteria need.
final class ChaosLog: Sendable {
    struct State: Sendable {
        var events: [(at: Double, event: ChaosEvent)] = []
        var sighups = 0
        /// Windows of Apple's routine connection recycling (monotonic nanoseconds): normal pushes
        /// sent in them must all be 201.
        var routineGoAwayWindows: [(from: UInt64, to: UInt64)] = []
        /// Emulator connects and seconds during GOAWAY storms.
        var stormConnects = 0
        var stormSeconds = 0.0
        var floodConnections = 0
    }
    let state = Mutex(State())
}

/// Runs `events` one after another, `spacing` seconds apart, until `end` (monotonic nanoseconds).
struct ChaosSchedule {
    let emulator: MockAPNsServer
    let relayPort: Int
    let relayPID: Int32
    let connectionCap: Int
    let rotateKey: () throws -> Void
    /// True once the relay answers /ready with 200.
    let relayReady: () -> Bool
    let log: ChaosLog
    let runStart: UInt64

    func run(from start: UInt64, until end: UInt64, spacing: Double) {
        var next = start
        var index = 0
        let events = ChaosEvent.allCases
        while next < end {
            let now = monotonicNanos()
            if now < next { usleep(UInt32(min(Double(next - now) / 1e3, 1e6))); continue }
            let event = events[index % events.count]
            index += 1
            log.state.withLock { $0.events.append((Double(now - runStart) / 1e9, event)) }
            perform(event)
            next += UInt64(spacing * 1e9)
        }
    }

    private func perform(_ event: ChaosEvent) {
        switch event {
        case .goAwayBurst:
            for _ in 0..<3 {
                emulator.goAwayAll()
                usleep(300_000)
            }
        case .streamLimits:
            emulator.advertiseMaxConcurrentStreams(1)
            sleep(2)
            emulator.advertiseMaxConcurrentStreams(10)
            sleep(2)
            emulator.advertiseMaxConcurrentStreams(emulator.rules.configuration.maxConcurrentStreams)
        case .routineGoAway:
            // Apple's normal day: a healthy connection recycled with a graceful GOAWAY. Counted
            // from the moment the relay is ready again after the events before it.
            let readyBy = monotonicNanos() + 5_000_000_000
            while !relayReady(), monotonicNanos() < readyBy { usleep(50_000) }
            let from = monotonicNanos()
            for round in 0..<3 {
                emulator.goAwayAll()
                usleep(round < 2 ? 5_000_000 : 1_000_000)
            }
            log.state.withLock { $0.routineGoAwayWindows.append((from, monotonicNanos())) }
        case .keyRotation:
            do {
                try rotateKey()
                kill(relayPID, SIGHUP)
                log.state.withLock { $0.sighups += 1 }
            } catch {
                say("relay-soak: could not rewrite the key for SIGHUP: \(error)")
            }
        case .emulatorRestart:
            emulator.stop()
            sleep(2)
            do { try emulator.restart() } catch { say("relay-soak: the emulator did not restart: \(error)") }
        case .idleFlood:
            flood(slowBody: false)
        case .slowBodyFlood:
            flood(slowBody: true)
        case .goAwayStorm:
            let before = emulator.connectionCount
            let started = monotonicNanos()
            emulator.rules.updateFaults { $0.goAwayAfterRequests = 1 }
            sleep(3)
            emulator.rules.updateFaults { $0.goAwayAfterRequests = nil }
            let seconds = Double(monotonicNanos() - started) / 1e9
            let connects = emulator.connectionCount - before
            log.state.withLock { $0.stormConnects += connects; $0.stormSeconds += seconds }
        }
    }

    /// `connectionCap` connections that never finish a request, held 5 s: idle ones send
    /// nothing; slow ones announce a 64 KiB body, send half of it, then a byte a second.
    private func flood(slowBody: Bool) {
        var sockets: [Int32] = []
        for _ in 0..<connectionCap {
            guard case .success(let fd) = connectLoopback(port: relayPort, timeoutSeconds: 1) else { continue }
            sockets.append(fd)
        }
        log.state.withLock { $0.floodConnections += sockets.count }
        if slowBody {
            let head = Array("POST /push/\(makeDeviceToken())/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: aes128gcm\r\nContent-Length: 65536\r\n\r\n".utf8)
            for fd in sockets { _ = sendAll(fd, head + [UInt8](repeating: 0x41, count: 32768)) }
        }
        for _ in 0..<5 {
            sleep(1)
            if slowBody { for fd in sockets { _ = sendAll(fd, [0x41]) } }
        }
        for fd in sockets { close(fd) }
    }
}
