import Foundation
import Synchronization
import Testing
import MockAPNs
import TestWaits
#if canImport(Glibc)
import Glibc
#endif

/// The shipped binary holding in Redis (`STORE_URL`): two relays on one redis-server, the same
/// key, Apple away; one relay SIGKILLed while delivering, or Redis SIGKILLed while holding.
@Suite("Holding in Redis in the shipped binary: two relays, kill -9", .serialized, .timeLimit(.minutes(4)))
struct HoldRedisServeTests {
    /// Two relays' settings on one Redis and one emulator (keeping every record: 10,000 pushes
    /// and their duplicates are more than its default 10,000, and the oldest would go).
    struct Fleet {
        let apple: MockAPNsServer
        let redis: RedisServer
        let files: [TemporaryFiles]
        let ca: URL
        let ports: [Int]

        init() throws {
            apple = try MockAPNsServer.start(
                configuration: MockAPNsConfiguration(topics: [RelayHarness.topic], teamID: RelayHarness.teamID,
                                                     keys: [RelayHarness.keyID: .es256(RelayHarness.key.publicKey)]),
                certificates: RelayHarness.certificates, recordCapacity: 40_000)
            redis = try RedisServer()
            ca = try TemporaryFiles.caFile()
            var files: [TemporaryFiles] = []
            var ports: [Int] = []
            for _ in 0..<2 {
                let relayFiles = try TemporaryFiles()
                let port = try freePort()
                try relayFiles.writeSettings(keyID: RelayHarness.keyID, key: RelayHarness.key.pemPKCS8, apple: apple, ca: ca, port: port, pool: 2)
                try (String(contentsOf: relayFiles.envFile, encoding: .utf8) + "\nSTORE_URL=\(redis.url())\nPUSH_TIMEOUT_MS=2000\n")
                    .write(to: relayFiles.envFile, atomically: true, encoding: .utf8)
                files.append(relayFiles)
                ports.append(port)
            }
            self.files = files
            self.ports = ports
        }

        func start(_ index: Int) async throws -> ServeProcess {
            let relay = try ServeProcess(arguments: ["serve", "--env-file", files[index].envFile.path], log: files[index].log)
            let port = ports[index]
            let up = try await eventually(within: .seconds(15)) {
                guard relay.isRunning else { throw TestHTTP.Failure(description: "the relay exited: \(relay.logText)") }
                let health = try? await TestHTTP.get(port: port, target: "/health")
                return health.map { String(decoding: $0.body, as: UTF8.self).contains(#""store_ok":true"#) } ?? false
            }
            guard up else { throw TestHTTP.Failure(description: "the relay never said store_ok: \(relay.logText)") }
            return relay
        }

        func remove() {
            apple.stop()
            redis.remove()
            for relayFiles in files { relayFiles.remove() }
            try? FileManager.default.removeItem(at: ca)
        }
    }

    /// `total` pushes from 16 senders, each to a device of its own, alternating between `ports`;
    /// with `midway`, run once when `midwayAt` were answered (while the others keep sending).
    static func send(_ total: Int, ports: [Int], answers: HoldServeTests.Answers, first: Int = 0) async {
        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<16 {
                group.addTask {
                    while let n = answers.next(of: total) {
                        await HoldServeTests.post(first + n, id: "r\(first + n)", port: ports[(n + sender) % ports.count], answers: answers)
                    }
                }
            }
        }
    }

    /// `relay_held_delivered_total` of the relay on `port`.
    static func delivered(port: Int) async throws -> Int {
        let page = String(decoding: try await TestHTTP.get(port: port, target: "/metrics").body, as: UTF8.self)
        let line = page.split(separator: "\n").first { $0.hasPrefix("relay_held_delivered_total ") } ?? ""
        return Int(Double(line.split(separator: " ").last ?? "") ?? 0)
    }

    @Test("Apple away: 10,000 pushes held through two relays on one Redis; Apple back, one relay SIGKILLed while delivering: the other delivers the rest, duplicates at most what was in flight")
    func relayKilledWhileDelivering() async throws {
        let fleet = try Fleet()
        defer { fleet.remove() }
        fleet.apple.stop()
        let relays = [try await fleet.start(0), try await fleet.start(1)]
        defer { for relay in relays { relay.forceStop() } }

        let total = 10_000
        let answers = HoldServeTests.Answers()
        await Self.send(total, ports: fleet.ports, answers: answers)
        let held = answers.held
        #expect(answers.refused.isEmpty, "\(answers.refused.prefix(5))")
        #expect(held.count == total, "\(held.count) held, \(answers.unanswered) unanswered")

        // The second is frozen while Apple comes back, so the first is the one delivering when it
        // is killed: each reconnects on its own back-off (up to a minute), and 10,000 drain in a
        // few seconds, so left to race, either could deliver them all before the other began.
        relays[1].signal(SIGSTOP)
        try fleet.apple.restart()
        let firstDelivers = try await eventually(within: .seconds(90)) { try await Self.delivered(port: fleet.ports[0]) >= 300 }
        #expect(firstDelivers)
        relays[0].signal(SIGKILL)
        relays[1].signal(SIGCONT)
        let killedAt = fleet.apple.records.filter { $0.status == 200 }.count
        _ = try await relays[0].stop()
        #expect(killedAt < total, "the first relay delivered all \(killedAt) before it was killed")
        // The other delivers the rest; what the dead one had leased comes once its leases run
        // out (PUSH_TIMEOUT_MS + 60 s), and then the store is empty.
        let drained = try await eventually(within: .seconds(120)) {
            String(decoding: try await TestHTTP.get(port: fleet.ports[1], target: "/health").body, as: UTF8.self).contains(#""held":0,"#)
        }
        #expect(drained)
        let accepted = fleet.apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") }
        let missing = held.subtracting(accepted)
        #expect(missing.isEmpty, "\(missing.count) of \(held.count) never reached Apple (killed at \(killedAt))")
        let duplicates = accepted.count - Set(accepted).count
        print("two relays on one Redis, one SIGKILLed while delivering (\(killedAt) delivered then): \(duplicates) duplicates of \(held.count)")
        #expect(duplicates <= 64, "\(duplicates) pushes reached Apple twice; HOLD_DELIVERY_IN_FLIGHT is 64")
        #expect(try await relays[1].stop() == 0)
    }

    @Test("Redis SIGKILLed and restarted (append-only, fsync always) while pushes are held: nothing answered 201 is lost")
    func redisKilledWhileHolding() async throws {
        let fleet = try Fleet()
        defer { fleet.remove() }
        fleet.apple.stop()
        let relays = [try await fleet.start(0), try await fleet.start(1)]
        defer { for relay in relays { relay.forceStop() } }

        let total = 3_000
        let answers = HoldServeTests.Answers()
        let senders = Task { await Self.send(total, ports: fleet.ports, answers: answers) }
        #expect(try await eventually(within: .seconds(60)) { answers.held.count >= 1_000 })
        fleet.redis.kill()
        try await Task.sleep(for: .milliseconds(300))
        try fleet.redis.start()
        await senders.value
        let held = answers.held
        // Pushes that met Redis down were answered 503 (the sender sends them again): never 4xx.
        #expect(answers.refused.allSatisfy { $0.hasPrefix("503") }, "\(answers.refused.prefix(5))")
        #expect(held.count > 1_000)
        print("Redis SIGKILLed while holding: \(held.count) answered 201, \(answers.refused.count) answered 503")

        try fleet.apple.restart()
        let delivered = try await eventually(within: .seconds(90)) {
            Set(fleet.apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") }).isSuperset(of: held)
        }
        let accepted = Set(fleet.apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") })
        #expect(delivered, "\(held.subtracting(accepted).count) of \(held.count) answered 201 never reached Apple")
        for relay in relays { #expect(try await relay.stop() == 0) }
    }
}
