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
            #expect(String(decoding: health.body, as: UTF8.self) == #"{"status":"alive","held":0}"#)
        }
    }

    @Test("never held: TTL 0 (503, as before), Apple's 4xx (410 stands), and a push over the cap (503)")
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
            let over = try await h.push(token: token("0b"), extra: [("TTL", "60")])
            #expect(over.status == 503, "\(over.status)")
            #expect(over.header("X-Relay-Held") == nil)
            #expect(h.logs.records.contains { $0.message == "push answered 503" && $0.metadata["hold.failed"] != nil })
            let page = String(decoding: try await TestHTTP.get(port: h.port, target: "/metrics").body, as: UTF8.self)
            #expect(page.contains(#"relay_hold_failures_total{reason="cap_reached"} 1"#), "\(page)")
        }
    }
}
