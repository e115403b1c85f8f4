import Foundation
import Synchronization
import Testing
import PushStore
import TestWaits

/// Two relays on one Redis taking, finishing and releasing at once, on the real clock: each push
/// is finished once, and every push taken is the one put under its id.
@Suite("Redis push store: two relays at once")
struct RedisConcurrencyTests {
    @Test("8 takers on two stores, some pushes released and taken again: each finished once, none mixed up")
    func twoStoresDeliverEachOnce() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let a = try place.openRedis(.generous)
        let b = try place.openRedis(.generous)
        defer { a.close(); b.close() }
        var byID: [HeldPushID: HeldPush] = [:]
        for chunk in 0..<20 {
            let pushes = (0..<100).map { samplePush(chunk * 100 + $0, device: chunk * 100 + $0, ttl: 1_000_000_000) }
            let ids = try await (chunk % 2 == 0 ? a : b).put(pushes).value().ids
            for (id, push) in zip(ids, pushes) { byID[id] = push }
        }
        let tally = Tally()
        let expected = byID
        let (first, second) = (a, b)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                let store = worker % 2 == 0 ? first : second
                group.addTask {
                    var round = 0
                    while true {
                        round += 1
                        let now = Int64(Date().timeIntervalSince1970 * 1000)
                        guard let taken = try? await store.take(max: 16, nowMs: now, leaseMs: 60_000).value() else { return }
                        if taken.isEmpty { if round > 3 { return } else { continue } }
                        for item in taken where expected[item.id] != item.push { tally.wrong.withLock { $0 += 1 } }
                        let (keep, back) = (taken.filter { $0.id.low % 3 != 0 || round % 2 == 0 }, taken.filter { !($0.id.low % 3 != 0 || round % 2 == 0) })
                        tally.delivered.withLock { $0 += keep.map(\.id) }
                        _ = await store.finish(keep.map(\.id))
                        if !back.isEmpty { _ = await store.release(back.map(\.id)) }
                    }
                }
            }
        }
        let all = tally.delivered.withLock { $0 }
        #expect(tally.wrong.withLock { $0 } == 0)
        #expect(all.count - Set(all).count == 0, "duplicates")
        #expect(Set(all).count == 2_000, "\(Set(all).count)")
    }
}

/// What the takers saw.
final class Tally: Sendable {
    let delivered = Mutex<[HeldPushID]>([])
    let wrong = Mutex<Int>(0)
}
