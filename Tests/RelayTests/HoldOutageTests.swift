import Foundation
import Testing
import CertificateSupport
import MockAPNs
import TestWaits
@testable import Relay

/// Each way Apple goes out of reach, ridden out by holding: every push answered 201 while it
/// lasts, each delivered exactly once when it ends. The emulator plays the outage
/// (`MockAPNsServer`'s outage calls); the relay runs over real sockets on a real SQLite file.
@Suite("Holding through each kind of outage", .serialized, .timeLimit(.minutes(2)))
struct HoldOutageTests {
    enum Outage: String, CaseIterable, Sendable {
        /// Connections cut, connects refused (Apple's address down, a partition with RST).
        case away
        /// Connects accepted and never answered (a black-holed route, a stuck load balancer).
        case silent
        /// Connections kept, every push answered 503 ServiceUnavailable (Apple's own incident).
        case unavailable
        /// A server certificate from a CA the relay does not trust (Apple's root moving).
        case otherCA

        func begin(_ apple: MockAPNsServer, otherCA: TestCertificates) throws {
            switch self {
            case .away: apple.takeAway()
            case .silent: try apple.goSilent()
            case .unavailable: apple.answerUnavailable()
            case .otherCA: try apple.presentCertificate(otherCA)
            }
        }

        func end(_ apple: MockAPNsServer) throws {
            switch self {
            case .away, .silent: try apple.bringBack()
            case .unavailable: apple.answerNormally()
            case .otherCA: try apple.presentOwnCertificate()
            }
        }
    }

    static let otherCA = try! TestCertificates.make(caName: "Another Root CA")

    @Test("Apple out of reach in each way: pushes answered 201 and held; when it ends, each reaches Apple once, as the sender heard it",
          arguments: Outage.allCases)
    func heldThroughOutage(_ outage: Outage) async throws {
        let (hold, directory) = try HoldEndToEndTests.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: hold) { h in
            // A push before the outage, so the pool has connections for the outage to cut.
            let before = try await h.push(token: token("ff"), extra: [("TTL", "60")])
            #expect(before.status == 201 && before.header("X-Relay-Held") == nil, "\(before.status)")

            try outage.begin(h.apple, otherCA: Self.otherCA)
            let answers = try await HoldEndToEndTests.pushes(h, count: 20)
            #expect(answers.allSatisfy { $0.status == 201 && $0.header("X-Relay-Held") == "true" },
                    "\(outage): \(answers.map { "\($0.status) \($0.header("X-Relay-Held") ?? "-")" })")
            let ids = Set(answers.compactMap { $0.header("apns-id") })
            #expect(ids.count == 20)
            // Nothing held reached Apple while it was out (503s are records, not deliveries).
            #expect(h.apple.records.filter { $0.status == 200 && ids.contains($0.header("apns-id") ?? "") }.isEmpty)
            // The outage outlasts a try of the held pushes, so what that try leaves (a lease, a
            // back-off) is in force when Apple comes back.
            #expect(try await eventually(within: .seconds(10)) {
                h.logs.records.contains { $0.message == "held pushes wait: APNs cannot take them now" }
            })

            try outage.end(h.apple)
            let delivered = try await eventually(within: .seconds(30)) {
                Set(h.apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") }).isSuperset(of: ids)
            }
            #expect(delivered, "\(outage): \(h.apple.records.filter { $0.status == 200 }.count - 1) of 20 delivered")
            // Settled, so nothing is out for delivery any more: then count each push's deliveries.
            #expect(try await eventually(within: .seconds(10)) {
                try await HoldEndToEndTests.metrics(h).contains("relay_held_pushes 0")
            })
            let accepted = h.apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") }.filter(ids.contains)
            #expect(accepted.count == 20, "\(outage): each held push once, got \(accepted.count) deliveries")
            #expect(h.apple.records.filter { $0.status == 200 }.allSatisfy {
                !ids.contains($0.header("apns-id") ?? "") || $0.header("apns-expiration") == String(h.now.unixSeconds + 3600)
            })
        }
    }
}
