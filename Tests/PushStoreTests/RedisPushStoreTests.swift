import Foundation
import Synchronization
import Testing
import PushStore
import TestWaits

/// What the Redis engine adds to the protocol: group commit over one round trip, several relays
/// ("replicas") on one Redis, a Redis that crashes or goes away. Every test has a redis-server of
/// its own (append-only, fsync always).
@Suite("Redis push store")
struct RedisPushStoreTests {
    static let now: Int64 = 1_700_000_000_000

    @Test("puts waiting together go in one script call (one fsync), each answered only after it")
    func groupCommit() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let store = try place.openRedis(.generous)
        defer { store.close() }
        _ = try await store.put([samplePush(0)]).value()
        let before = store.commits
        store.pauseWriter()
        let answered = AnsweredPuts()
        for n in 1...200 { store.put([samplePush(n, device: n)]) { answered.add($0) } }
        #expect(answered.count == 0)
        store.resumeWriter()
        #expect(try await eventually { answered.count == 200 })
        #expect(answered.failures == 0)
        #expect(store.commits - before == 1)
        #expect(try await store.counts().value().entries == 201)
    }

    @Test("two relays on one Redis never take the same push at once, and together take every one")
    func twoReplicasTakeApart() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let first = try place.openRedis(.generous)
        let second = try place.openRedis(.generous)
        defer { first.close(); second.close() }
        #expect(first.consumer != second.consumer)
        var ids: [HeldPushID] = []
        for chunk in 0..<10 { ids += try await first.put((0..<30).map { samplePush(chunk * 30 + $0, device: $0) }).value().ids }
        let takes = await withTaskGroup(of: [HeldPushID].self) { group in
            for index in 0..<20 {
                let store = index % 2 == 0 ? first : second
                group.addTask { ((try? await store.take(max: 15, nowMs: Self.now, leaseMs: 60_000).value()) ?? []).map(\.id) }
            }
            var all: [HeldPushID] = []
            for await taken in group { all += taken }
            return all
        }
        #expect(takes.count == 300)
        #expect(Set(takes).count == 300, "no push taken twice")
        #expect(takes.sorted() == ids)
        #expect(try await second.take(max: 10, nowMs: Self.now, leaseMs: 60_000).value().isEmpty)
    }

    @Test("a relay that vanished: its leased pushes go to the other once the lease runs out, not before")
    func vanishedConsumerLeasesRunOut() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let vanished = try place.openRedis(.generous)
        let other = try place.openRedis(.generous)
        defer { other.close(); vanished.close() }
        let ids = try await other.put((0..<10).map { samplePush($0, device: $0) }).value().ids
        let lost = try await vanished.take(max: 4, nowMs: Self.now, leaseMs: 30_000).value().map(\.id)
        #expect(lost == Array(ids.prefix(4)))
        // It never answers again. Before the lease ends the other gets only the rest. (A second
        // before: Redis measures an entry's idle time on its own clock as each command runs, a
        // few milliseconds after the TIME the take's script read, so at 1 ms before the end a
        // busy machine saw the leases end early.)
        #expect(try await other.take(max: 10, nowMs: Self.now + 29_000, leaseMs: 30_000).value().map(\.id) == Array(ids.suffix(6)))
        #expect(try await other.take(max: 10, nowMs: Self.now + 29_000, leaseMs: 30_000).value().isEmpty)
        let counts = try await other.counts().value()
        #expect(counts.leased == 10)
        // Once it has run out, they are the other's, oldest first; none is lost.
        #expect(try await other.take(max: 10, nowMs: Self.now + 30_000, leaseMs: 30_000).value().map(\.id) == lost)
        try await other.finish(ids).value()
        #expect(try await other.counts().value() == HeldCounts(entries: 0, bytes: 0, oldestArrivalMs: nil, leased: 0))
    }

    @Test("a relay that stops gives its leased pushes back: the other takes them at once")
    func closeGivesLeasesBack() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let leaving = try place.openRedis(.generous)
        let staying = try place.openRedis(.generous)
        defer { staying.close() }
        let ids = try await staying.put((0..<5).map { samplePush($0, device: $0) }).value().ids
        #expect(try await leaving.take(max: 5, nowMs: Self.now, leaseMs: 600_000).value().map(\.id) == ids)
        leaving.close()
        #expect(try await staying.take(max: 5, nowMs: Self.now, leaseMs: 600_000).value().map(\.id) == ids)
    }

    @Test("the caps hold across relays: one Redis, one count")
    func capsAcrossRelays() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let limits = HoldLimits(maxEntries: 10, maxBytes: 1 << 30, maxPerDevice: 3)
        let first = try place.openRedis(limits)
        let second = try place.openRedis(limits)
        defer { first.close(); second.close() }
        _ = try await first.put((0..<6).map { samplePush($0, device: $0) }).value()
        #expect(await second.put((6..<11).map { samplePush($0, device: $0) }).failureCode == .capReached)
        _ = try await second.put((6..<10).map { samplePush($0, device: $0) }).value()
        #expect(await first.put([samplePush(10, device: 10)]).failureCode == .capReached)
        #expect(try await first.counts().value().entries == 10)
        // The device cap counts what either relay put for a device: device 5 has one (second's),
        // then one from each relay, then a fourth drops the oldest.
        let taken = try await first.take(max: 3, nowMs: Self.now, leaseMs: 60_000).value()
        try await second.finish(taken.map(\.id)).value()
        #expect(try await second.put([samplePush(20, device: 5)]).value().droppedForDeviceCap == 0)
        #expect(try await first.put([samplePush(21, device: 5)]).value().droppedForDeviceCap == 0)
        #expect(try await second.put([samplePush(22, device: 5)]).value().droppedForDeviceCap == 1)
        #expect(try await first.counts().value().entries == 9)
    }

    @Test("Redis killed with SIGKILL and started again (append-only, fsync always): every put answered is there")
    func acknowledgedPutsSurviveRedisCrash() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let store = try place.openRedis(.generous)
        let acknowledged = Mutex<[HeldPushID]>([])
        let answered = Atomic(0)
        for n in 0..<3_000 {
            store.put([samplePush(n, device: n)]) { result in
                if case .success(let receipt) = result { acknowledged.withLock { $0 += receipt.ids } }
                answered.add(1, ordering: .relaxed)
            }
            if n == 1_500 {
                #expect(try await eventually { acknowledged.withLock { $0.count } > 200 })
                place.server.kill()
            }
        }
        #expect(try await eventually(within: .seconds(20)) { answered.load(ordering: .relaxed) == 3_000 })
        store.close()
        try place.server.start()
        let reopened = try place.openRedis(.generous)
        defer { reopened.close() }
        let held = Set(try await reopened.take(max: 5_000, nowMs: Self.now, leaseMs: 60_000).value().map(\.id))
        let kept = acknowledged.withLock { $0 }
        #expect(kept.count > 200)
        #expect(kept.filter { !held.contains($0) }.isEmpty, "\(kept.filter { !held.contains($0) }.count) of \(kept.count) acknowledged puts lost")
        #expect(try await reopened.counts().value().entries == held.count)
    }

    @Test("Redis down: a call answers unreachable at once, never hangs; Redis back: the store works again by itself")
    func unreachableThenBack() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let store = try place.openRedis(.generous, timeout: .seconds(1))
        defer { store.close() }
        _ = try await store.put([samplePush(0)]).value()
        #expect(store.isAvailable)
        place.server.stop()
        let started = ContinuousClock.now
        #expect(await store.put([samplePush(1)]).failureCode == .unreachable)
        #expect(await store.take(max: 1, nowMs: Self.now, leaseMs: 1).failureCode == .unreachable)
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(!store.isAvailable)
        try place.server.start()
        #expect(try await eventually(within: .seconds(15)) {
            if case .success = await store.put([samplePush(2)]) { return true }
            return false
        })
        #expect(store.isAvailable)
        #expect(try await store.counts().value().entries == 2)
    }

    @Test("a Redis that never answers (stopped with SIGSTOP): the call times out, unreachable")
    func silentRedisTimesOut() async throws {
        let place = try RedisPlace()
        defer { place.remove() }
        let store = try place.openRedis(.generous, timeout: .milliseconds(500))
        defer { store.close() }
        _ = try await store.put([samplePush(0)]).value()
        kill(place.server.processID, SIGSTOP)
        defer { kill(place.server.processID, SIGCONT) }
        let started = ContinuousClock.now
        #expect(await store.put([samplePush(1)]).failureCode == .unreachable)
        #expect(ContinuousClock.now - started < .seconds(3))
        kill(place.server.processID, SIGCONT)
        #expect(try await eventually(within: .seconds(15)) {
            if case .success = await store.counts() { return true }
            return false
        })
    }

    @Test("Redis at its maxmemory refuses the put: diskFull, never a crash; a relay answers 503")
    func maxmemoryIsFull() async throws {
        let server = try RedisServer(extraConfig: ["--maxmemory", "2mb", "--maxmemory-policy", "noeviction"])
        defer { server.remove() }
        let store = try RedisPushStore(address: try RedisAddress.parse(server.url()).get(), limits: .generous)
        defer { store.close() }
        var code: PushStoreError.Code?
        for n in 0..<2_000 {
            if case .failure(let error) = await store.put([samplePush(n, device: n, payloadBytes: 4_000)]) {
                code = error.code
                break
            }
        }
        #expect(code == .diskFull)
    }
}
