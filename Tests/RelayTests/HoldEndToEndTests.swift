import Foundation
import Testing
import MockAPNs
import PushStore
import TestWaits
@testable import Relay

/// Pushes Apple could not take, held on disk and delivered when it is back: the relay over real
/// sockets, the store a real SQLite file, the emulator taken away and brought back.
@Suite("Holding what Apple could not take", .serialized, .timeLimit(.minutes(2)))
struct HoldEndToEndTests {
    static func store() throws -> (HoldConfiguration, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hold-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return (HoldConfiguration(store: .file(path: directory + "/held.sqlite", chosenBy: .operatorSetting)), directory)
    }

    /// `count` pushes at once, each to its own device, with `TTL`.
    static func pushes(_ h: RelayHarness, count: Int, first: Int = 0, ttl: String = "3600") async throws -> [TestHTTP.Response] {
        try await withThrowingTaskGroup(of: (Int, TestHTTP.Response).self) { group in
            for i in 0..<count {
                group.addTask { (i, try await h.push(token: token(String(format: "%06x", first + i)), id: "n\(first + i)", extra: [("TTL", ttl)])) }
            }
            var answers = [TestHTTP.Response?](repeating: nil, count: count)
            for try await (i, answer) in group { answers[i] = answer }
            return answers.compactMap { $0 }
        }
    }

    @Test("Apple gone: every push is answered 201 and held; back, each reaches Apple once, with the id the sender heard and apns-expiration = arrival + TTL")
    func outageThenDelivery() async throws {
        let (hold, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            h.apple.stop()
            let answers = try await Self.pushes(h, count: 30)
            #expect(answers.allSatisfy { $0.status == 201 }, "\(answers.map(\.status))")
            #expect(answers.allSatisfy { $0.header("X-Relay-Held") == "true" })
            let ids = Set(answers.compactMap { $0.header("apns-id") })
            #expect(ids.count == 30)
            #expect(h.apple.records.filter { $0.status == 200 }.isEmpty)
            #expect(h.logs.records.filter { $0.message == "push held" }.count == 30)

            try h.apple.restart()
            let delivered = try await eventually(within: .seconds(20)) { h.apple.records.filter { $0.status == 200 }.count >= 30 }
            #expect(delivered, "\(h.apple.records.count) records")
            let accepted = h.apple.records.filter { $0.status == 200 }
            #expect(accepted.count == 30, "each held push once")
            #expect(Set(accepted.compactMap { $0.header("apns-id") }) == ids)
            #expect(accepted.allSatisfy { $0.header("apns-expiration") == String(h.now.unixSeconds + 3600) })
            // Drained: the store is counted empty, and the metrics say where the pushes went.
            #expect(try await eventually(within: .seconds(10)) {
                let page = try await TestHTTP.get(port: h.port, target: "/metrics")
                let text = String(decoding: page.body, as: UTF8.self)
                return text.contains("relay_held_delivered_total 30") && text.contains("relay_held_pushes 0")
                    && text.contains("relay_held_pushes_total 30")
            })
            let health = try await TestHTTP.get(port: h.port, target: "/health")
            let text = String(decoding: health.body, as: UTF8.self)
            #expect(text.hasPrefix(#"{"status":"alive","held":0,"store":"sqlite:/"#) && text.hasSuffix(#"held.sqlite","store_ok":true}"#), "\(text)")
        }
    }

    @Test("a held push Apple never answers does not hold up the ones behind it: it keeps its lease, the next try takes the next")
    func unansweredHeldPushDoesNotBlock() async throws {
        let (hold, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            h.apple.stop()
            // Held first, so first in line: Apple takes it and never answers.
            let stuck = try await h.push(token: token(MockFaults.Prefix.neverAnswer), id: "stuck", extra: [("TTL", "3600")])
            #expect(stuck.status == 201 && stuck.header("X-Relay-Held") == "true", "\(stuck.status)")
            let answers = try await Self.pushes(h, count: 5, first: 1)
            #expect(answers.allSatisfy { $0.status == 201 && $0.header("X-Relay-Held") == "true" })

            try h.apple.restart()
            // Released after its timeout, the unanswered push stood first again at every try
            // (one a second, 2 s each): none of the five went in 20 s.
            let delivered = try await eventually(within: .seconds(20)) { h.apple.records.filter { $0.status == 200 }.count >= 5 }
            #expect(delivered, "\(h.apple.records.filter { $0.status == 200 }.count) of 5 delivered")
            #expect(Set(h.apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") })
                    == Set(answers.compactMap { $0.header("apns-id") }))
        }
    }

    @Test("held pushes Apple never answers do not slow the rest: a written push without an answer shows Apple is there, so delivery goes on at full pace")
    func unansweredHeldPushesKeepThePace() async throws {
        let (hold, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            h.apple.stop()
            // Held first, so first in line: Apple takes each and never answers.
            for n in 0..<8 {
                let stuck = try await h.push(token: token(MockFaults.Prefix.neverAnswer + String(format: "%02x", n)), id: "stuck\(n)",
                                             extra: [("TTL", "3600")])
                #expect(stuck.status == 201 && stuck.header("X-Relay-Held") == "true", "\(stuck.status)")
            }
            let answers = try await Self.pushes(h, count: 40, first: 10)
            #expect(answers.allSatisfy { $0.status == 201 && $0.header("X-Relay-Held") == "true" })

            try h.apple.restart()
            // From Apple's first record (the pool reconnects on its back-off, seconds after the
            // restart on a busy machine): slowed to a try a second after each unanswered one
            // (relay-soak: 316 of 9,916 held pushes still waiting at the end), the 40 came after
            // the 8 had had their 2 s each, one at a time: 22.7 s after Apple was back. Now they
            // go with the second try.
            #expect(try await eventually(within: .seconds(70)) { !h.apple.records.isEmpty })
            let firstTry = ContinuousClock.now
            #expect(try await eventually(within: .seconds(40)) { h.apple.records.filter { $0.status == 200 }.count >= 40 })
            let took = ContinuousClock.now - firstTry
            #expect(took < .seconds(8), "the 40 delivered \(took) after Apple's first record")
        }
    }

    @Test("a held push Apple answers with a 4xx it may take later (429) stays held, leased, behind the others, and is tried again; never dropped as refused")
    func refusedForNowStaysHeld() async throws {
        let (hold, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            h.apple.stop()
            // Held first, so first in line: Apple answers it 429 TooManyRequests every time.
            let busy = try await h.push(token: token(MockFaults.Prefix.tooManyRequests), id: "busy", extra: [("TTL", "3600")])
            #expect(busy.status == 201 && busy.header("X-Relay-Held") == "true", "\(busy.status)")
            let answers = try await Self.pushes(h, count: 5, first: 1)
            #expect(answers.allSatisfy { $0.status == 201 && $0.header("X-Relay-Held") == "true" })

            try h.apple.restart()
            let busyID = busy.header("apns-id")
            func tries() -> Int { h.apple.records.filter { $0.header("apns-id") == busyID }.count }
            #expect(try await eventually(within: .seconds(20)) { try await Self.metrics(h).contains("relay_held_delivered_total 5") })
            #expect(tries() == 1, "leased after its 429: not tried again before the lease runs out")
            let page = try await Self.metrics(h)
            #expect(page.contains("relay_held_refused_total 0") && page.contains("relay_held_pushes 1"), "\(page)")
            // Past its lease (the push deadline + 60 s), it is due again: tried, still kept.
            h.wallClock.advance(by: 70)
            #expect(try await eventually(within: .seconds(10)) { tries() >= 2 }, "tried \(tries()) times")
            #expect(try await Self.metrics(h).contains("relay_held_refused_total 0"))
        }
    }

    @Test("never held: TTL 0 (503, as before), Apple's 4xx (410 stands), and a push over the cap (503, or 504 at its deadline)")
    func neverHeld() async throws {
        var (hold, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        hold.limits = HoldLimits(maxEntries: 2, maxBytes: 1 << 20, maxPerDevice: 10)
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            let dead = try await h.push(token: token(MockFaults.Prefix.unregistered), extra: [("TTL", "60")])
            #expect(dead.status == 410)
            #expect(dead.header("X-Relay-Held") == nil)

            h.apple.stop()
            let zero = try await h.push(token: token("0a"), extra: [("TTL", "0")])
            #expect(zero.status == 503 || zero.status == 504, "\(zero.status)")
            #expect(zero.header("X-Relay-Held") == nil)
            let kept = try await Self.pushes(h, count: 2)
            #expect(kept.allSatisfy { $0.status == 201 })
            // Answered as without holding: 503 when Apple was found unreachable first, 504 when
            // the push's deadline came first (on a busy machine, the reconnect's back-off).
            let over = try await h.push(token: token("0b"), extra: [("TTL", "60")])
            #expect(over.status == 503 || over.status == 504, "\(over.status)")
            #expect(over.header("X-Relay-Held") == nil)
            #expect(h.logs.records.contains { $0.message == "push answered \(over.status)" && $0.metadata["hold.failed"] != nil })
            let page = String(decoding: try await TestHTTP.get(port: h.port, target: "/metrics").body, as: UTF8.self)
            #expect(page.contains(#"relay_hold_failures_total{reason="cap_reached"} 1"#), "\(page)")
        }
    }

    /// The relay's metrics page as text.
    static func metrics(_ h: RelayHarness) async throws -> String {
        String(decoding: try await TestHTTP.get(port: h.port, target: "/metrics").body, as: UTF8.self)
    }

    @Test("a held push past arrival + TTL is dropped and counted, never sent")
    func expiredNeverSent() async throws {
        let (hold, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            h.apple.stop()
            let short = try await Self.pushes(h, count: 3, ttl: "60")
            let long = try await Self.pushes(h, count: 2, first: 100, ttl: "3600")
            #expect((short + long).allSatisfy { $0.status == 201 && $0.header("X-Relay-Held") == "true" })
            h.wallClock.advance(by: 61)
            #expect(try await eventually(within: .seconds(10)) { try await Self.metrics(h).contains("relay_held_expired_total 3") })
            try h.apple.restart()
            #expect(try await eventually(within: .seconds(20)) { try await Self.metrics(h).contains("relay_held_delivered_total 2") })
            let sent = Set(h.apple.records.compactMap { $0.header("apns-id") })
            #expect(sent == Set(long.compactMap { $0.header("apns-id") }), "only the unexpired went out")
            // One line per sweep that dropped any: a push out for delivery at its expiry goes at a later one.
            let lines = h.logs.records.filter { $0.message == "held pushes expired, never sent" }
            #expect(lines.reduce(0) { total, line in
                if case .int(let count)? = line.metadata["count"] { return total + count }
                return total
            } == 3, "\(lines.map(\.metadata))")
        }
    }

    @Test("a device over HOLD_MAX_PER_DEVICE keeps its newest pushes (and one out for delivery at the time); the older are dropped and counted")
    func deviceCap() async throws {
        var (hold, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        hold.limits.maxPerDevice = 2
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            h.apple.stop()
            var ids: [String] = []
            for n in 0..<5 {
                let answer = try await h.push(token: token("0c"), id: "d\(n)", extra: [("TTL", "3600")])
                #expect(answer.status == 201 && answer.header("X-Relay-Held") == "true")
                ids.append(answer.header("apns-id") ?? "")
            }
            try h.apple.restart()
            // While Apple is away the oldest push is tried once a tick; one out for delivery when
            // a newer one arrives is spared (it may be reaching Apple). So: the newest two are
            // delivered, every push is delivered or dropped exactly once, and no more than one
            // older than the newest two is delivered.
            func count(_ series: String) async throws -> Int {
                let line = try await Self.metrics(h).split(separator: "\n").first { $0.hasPrefix(series + " ") }
                return Int(line?.split(separator: " ").last ?? "") ?? 0
            }
            #expect(try await eventually(within: .seconds(20)) {
                let delivered = try await count("relay_held_delivered_total")
                let dropped = try await count(#"relay_held_dropped_total{reason="device_cap"}"#)
                let held = try await count("relay_held_pushes")
                return delivered + dropped == 5 && held == 0
            })
            let delivered = h.apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") }
            #expect(Set(delivered).isSuperset(of: ids.suffix(2)), "the newest two: \(delivered) of \(ids)")
            #expect(delivered.count == Set(delivered).count && delivered.count <= 3, "\(delivered)")
            let deliveredTotal = try await count("relay_held_delivered_total")
            #expect(deliveredTotal == delivered.count)
        }
    }

    @Test("a full disk: the push that does not fit is answered as without holding (503, or 504 at its deadline; never a 4xx), counted as disk_full, and pushes fit again once there is room", .enabled(if: getuid() == 0))
    func fullDisk() async throws {
        // A real file system of 320 KiB (tmpfs), so SQLite meets ENOSPC as on a full disk.
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("hold-full-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: mountPoint) }
        let mounted = try await Self.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=320k", "tmpfs", mountPoint])
        try #require(mounted == 0)
        defer { _ = umount(mountPoint) }
        let hold = HoldConfiguration(store: .file(path: mountPoint + "/held.sqlite", chosenBy: .operatorSetting))
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            h.apple.stop()
            // A filler file takes most of the room; pushes fill the rest.
            let filler = mountPoint + "/filler"
            try Data(count: 200 * 1024).write(to: URL(fileURLWithPath: filler))
            var statuses: [Int] = []
            for n in 0..<400 {
                let answer = try await h.push(token: token(String(format: "f%05x", n)), id: "f\(n)", extra: [("TTL", "3600")])
                statuses.append(answer.status)
                if answer.status != 201 { break }
            }
            // Answered as without holding: 503 when the client found Apple unreachable, 504 when
            // the push's deadline came first (on a loaded machine it can).
            #expect(statuses.last == 503 || statuses.last == 504, "the disk filled: \(statuses.count) pushes, last \(statuses.last ?? 0)")
            #expect(statuses.allSatisfy { $0 == 201 || $0 == 503 || $0 == 504 })
            #expect(try await Self.metrics(h).contains(#"relay_hold_failures_total{reason="disk_full"} 1"#))
            #expect(h.logs.records.contains { $0.message.hasPrefix("push answered 50") && ($0.metadata["hold.failed"]?.description.contains("full") ?? false) })
            try FileManager.default.removeItem(atPath: filler)
            let again = try await h.push(token: token("f0ffff"), id: "again", extra: [("TTL", "3600")])
            #expect(again.status == 201 && again.header("X-Relay-Held") == "true", "\(again.status) \(again.reason ?? "")")
        }
    }

    /// Runs a program to its end; its exit status.
    static func run(_ path: String, _ arguments: [String]) async throws -> Int32 {
        try await onOwnThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }
}
