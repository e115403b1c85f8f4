import Foundation
import Testing
import EventLoop
import MockAPNs
import TestWaits
@testable import APNsCore
@testable import APNs

/// Sends one push from inside `loop`, as the relay's responder does, and tells how it ended and
/// whether its completion ran on that same loop.
private func send(_ notification: APNsNotification, from loop: EventLoop, with client: APNsClient) async
    -> (result: Result<APNsResponse, APNsError>, onSameLoop: Bool) {
    await withCheckedContinuation { continuation in
        loop.execute {
            client.send(notification, environment: .production) { result in
                continuation.resume(returning: (result, EventLoop.current === loop))
            }
        }
    }
}

@Suite("Shared-nothing pool: each loop owns its connections", .serialized)
struct SharedNothingTests {
    @Test("a push sent on a loop goes out on that loop's connection and is answered on that loop")
    func staysOnItsLoop() async throws {
        let harness = try ClientHarness(poolSize: 2, loops: 2)
        #expect(try await harness.waitUntilReady())
        // Ready means one connection is up; a loop whose own one is still connecting hands its
        // push to the other loop, as it should. So wait until every loop has its own.
        #expect(try await eventually(within: .seconds(5)) { harness.group.loops.map { harness.client.readyConnections(on: $0) } == [1, 1] })
        var emulatorConnections: [Set<Int>] = []
        for (k, loop) in harness.group.loops.enumerated() {
            var used = Set<Int>()
            for i in 0..<8 {
                let notification = Fixture.notification("", k * 100 + i)
                let (result, onSameLoop) = await send(notification, from: loop, with: harness.client)
                #expect((try? result.get().ok) == true)
                // The completion runs where the connection lives: on the sender's loop, no hop.
                #expect(onSameLoop, "push \(i) sent on loop \(k) was answered on another loop")
                used.formUnion(harness.records(for: notification.token).map(\.connectionID))
            }
            emulatorConnections.append(used)
        }
        // Each loop's pushes all took that loop's one connection, and the two loops' differ.
        #expect(emulatorConnections.map(\.count) == [1, 1])
        #expect(emulatorConnections[0].isDisjoint(with: emulatorConnections[1]))
        await harness.close()
    }

    @Test("with one loop's connections down, a push sent on that loop goes out on another loop's")
    func fallsBackToAnotherLoop() async throws {
        // A long backoff keeps the broken slot down for the whole test.
        let harness = try ClientHarness(poolSize: 2, loops: 2) {
            $0.backoffBase = .seconds(20)
            $0.backoffMax = .seconds(40)
        }
        #expect(try await harness.waitUntilReady())
        let loops = harness.group.loops
        let client = harness.client
        func ready(_ counts: [Int]) async throws -> Bool {
            try await eventually(within: .seconds(5)) { loops.map { client.readyConnections(on: $0) } == counts }
        }
        #expect(try await ready([1, 1]))
        #expect(await client.breakConnections(on: loops[0]) == 1)
        // The close completes on the loop's next turns: wait until loop 0's shard has seen it.
        #expect(try await ready([0, 1]))
        for i in 0..<4 {
            let (result, onSameLoop) = await send(Fixture.notification("", i), from: loops[0], with: harness.client)
            #expect((try? result.get().ok) == true)
            #expect(!onSameLoop, "loop 0 has no connection: the push must have gone out on loop 1's")
        }
        #expect(harness.client.isReady)
        await harness.close()
    }

    @Test("load spreads over every connection of a pool of 4, not only the first one answered", arguments: [1, 2])
    func loadSpreads(loops: Int) async throws {
        let harness = try ClientHarness(poolSize: 4, faults: MockFaults(globalDelay: .milliseconds(5)), loops: loops)
        #expect(try await eventually(within: .seconds(5)) { harness.client.connectionStats().open == 4 })
        // One connection answers first and may then take far more streams than the others, which
        // still carry one each until their own first answer.
        #expect(try await harness.client.send(Fixture.notification("", 0), environment: .production).get().ok)
        var tokens: Set<String> = []
        let waves = 20, wave = 20
        for w in 0..<waves {
            let notifications = (0..<wave).map { Fixture.notification("", 1 + w * wave + $0) }
            for notification in notifications { tokens.insert("/3/device/" + notification.token.hex) }
            let ok = await withTaskGroup(of: Bool.self) { group in
                for notification in notifications {
                    group.addTask { (try? await harness.client.send(notification, environment: .production).get().ok) == true }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(ok == wave)
        }
        var perConnection: [Int: Int] = [:]
        for record in harness.server.records where tokens.contains(record.path) {
            perConnection[record.connectionID, default: 0] += 1
        }
        #expect(perConnection.count == 4, "\(perConnection)")
        // An even share is 100 of the 400; every connection carries a real part of it.
        #expect(perConnection.values.allSatisfy { $0 >= waves * wave / 10 }, "\(perConnection)")
        await harness.close()
    }
}
