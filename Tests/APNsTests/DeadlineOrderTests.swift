import Testing
import Foundation
import Synchronization
import EventLoop
import MockAPNs
@testable import APNsCore
@testable import APNs

/// The connection's one deadline timer, attacked: deadlines out of order, answers in between,
/// a connection broken under pushes in flight. Every push must end exactly once.
@Suite("one deadline timer per connection, attacked", .serialized)
struct DeadlineOrderTests {
    private static let payload = try! APNsPayload(json: Array(#"{"aps":{"alert":"hi"}}"#.utf8))

    private final class Ends: Sendable {
        private let state = Mutex<[(index: Int, timedOut: Bool)]>([])
        func record(_ index: Int, timedOut: Bool) { state.withLock { $0.append((index, timedOut)) } }
        var all: [(index: Int, timedOut: Bool)] { state.withLock { $0 } }
    }

    @Test("pushes sent with deadlines out of order each time out once, in the order of their deadlines, and answered ones are untouched")
    func deadlinesOutOfOrder() async throws {
        let harness = try ClientHarness(poolSize: 1, loops: 1) { $0.stallGrace = .seconds(30) }
        #expect(try await harness.waitUntilReady())
        // Raise the emulator's stream limit from 1 first, so every push below is on the wire at once.
        let first = await harness.client.send(Fixture.notification("", 0), environment: .production)
        #expect((try? first.get().ok) == true)
        // A second apart, far more than sending them takes, so the order of ends is the order of
        // deadlines; and the shortest is a second, so each is on the wire (recorded) before any
        // deadline passes even on a loaded machine (at 400 ms one once timed out unsent under a
        // second make test).
        let timeouts = [4000, 1000, 3000, 2000, 5000]
        let ends = Ends()
        var tasks: [Task<Void, Never>] = []
        for (i, ms) in timeouts.enumerated() {
            let token = Fixture.token(MockFaults.Prefix.neverAnswer, i + 1).hex
            tasks.append(Task {
                do throws(APNsError) {
                    _ = try await harness.client.send(Self.payload, to: token,
                                                      options: APNsPushOptions(topic: Fixture.topic, timeout: .milliseconds(ms)))
                    ends.record(i, timedOut: false)
                } catch {
                    ends.record(i, timedOut: error.code == .timeout)
                }
            })
        }
        // Answered pushes while the timer waits: they must not disturb it.
        #expect(try await harness.waitForRecords(count: 1 + timeouts.count, timeout: .seconds(5)))
        for n in 0..<5 {
            let answered = await harness.client.send(Fixture.notification("", 100 + n), environment: .production)
            #expect((try? answered.get().ok) == true)
        }
        for task in tasks { await task.value }
        let all = ends.all
        #expect(all.count == timeouts.count)
        #expect(Set(all.map(\.index)).count == timeouts.count, "a push ended twice: \(all)")
        #expect(all.allSatisfy { $0.timedOut }, "\(all)")
        let expectedOrder = timeouts.indices.sorted { timeouts[$0] < timeouts[$1] }
        #expect(all.map(\.index) == expectedOrder)
        await harness.close()
    }

    @Test("pushes in flight when their connection breaks are retried, and still end once, at their deadlines")
    func brokenUnderDeadlines() async throws {
        let harness = try ClientHarness(poolSize: 1, loops: 1) { $0.stallGrace = .seconds(30) }
        #expect(try await harness.waitUntilReady())
        let first = await harness.client.send(Fixture.notification("", 0), environment: .production)
        #expect((try? first.get().ok) == true)
        let ends = Ends()
        let count = 4
        var tasks: [Task<Void, Never>] = []
        for i in 0..<count {
            let token = Fixture.token(MockFaults.Prefix.neverAnswer, i + 1).hex
            tasks.append(Task {
                do throws(APNsError) {
                    _ = try await harness.client.send(Self.payload, to: token,
                                                      options: APNsPushOptions(topic: Fixture.topic, timeout: .milliseconds(1500 + 200 * i)))
                    ends.record(i, timedOut: false)
                } catch {
                    ends.record(i, timedOut: error.code == .timeout)
                }
            })
        }
        #expect(try await harness.waitForRecords(count: 1 + count, timeout: .seconds(5)))
        let loop = harness.group.loops[0]
        #expect(await harness.client.breakConnections(on: loop) == 1)
        for task in tasks { await task.value }
        let all = ends.all
        #expect(all.count == count)
        #expect(Set(all.map(\.index)).count == count, "a push ended twice: \(all)")
        // Retried on the new connection and unanswered there too: each ends by its deadline.
        #expect(all.allSatisfy { $0.timedOut }, "\(all)")
        await harness.close()
    }
}
