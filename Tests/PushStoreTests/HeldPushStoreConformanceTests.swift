import Foundation
import Testing
import PushStore

/// What every engine behind `HeldPushStore` must do, written against the protocol only: each
/// test runs once per `StoreEngine`, on a store of its own.
@Suite("HeldPushStore conformance")
struct HeldPushStoreConformanceTests {
    static let now: Int64 = 1_700_000_000_000

    @Test("batches come back oldest first, each push as it was put", arguments: StoreEngine.allCases)
    func putThenTakeOldestFirst(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let store = try place.open(.generous)
        defer { store.close() }
        let first = (0..<3).map { samplePush($0, device: $0) }
        let second = (3..<5).map { samplePush($0, device: $0) }
        let firstIDs = try await store.put(first).value("first put").ids
        let secondIDs = try await store.put(second).value("second put").ids
        #expect(firstIDs.count == 3 && secondIDs.count == 2)
        #expect(firstIDs + secondIDs == (firstIDs + secondIDs).sorted())
        let taken = try await store.take(max: 10, nowMs: Self.now, leaseMs: 60_000).value("take")
        #expect(taken.map(\.id) == firstIDs + secondIDs)
        #expect(taken.map(\.push) == first + second)
        let counts = try await store.counts().value("counts")
        #expect(counts.entries == 5)
        #expect(counts.bytes == (first + second).reduce(0) { $0 + $1.storedBytes })
        #expect(counts.oldestArrivalMs == first[0].arrivalMs)
        #expect(counts.leased == 5)
    }

    @Test("a take is bounded, and two takers never get the same push", arguments: StoreEngine.allCases)
    func leasesKeepTakersApart(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let store = try place.open(.generous)
        defer { store.close() }
        let ids = try await store.put((0..<40).map { samplePush($0, device: $0) }).value("put").ids
        // Eight takers at once, five each: every push once, none twice.
        let takes = await withTaskGroup(of: [HeldPushID].self) { group in
            for _ in 0..<8 {
                group.addTask { ((try? await store.take(max: 5, nowMs: Self.now, leaseMs: 60_000).value()) ?? []).map(\.id) }
            }
            var all: [[HeldPushID]] = []
            for await ids in group { all.append(ids) }
            return all
        }
        #expect(takes.allSatisfy { $0.count == 5 })
        #expect(takes.flatMap { $0 }.sorted() == ids)
        #expect(try await store.take(max: 5, nowMs: Self.now, leaseMs: 60_000).value().isEmpty)
        // A taker that vanished: its leases run out and the pushes are due again, oldest first.
        let again = try await store.take(max: 3, nowMs: Self.now + 60_000, leaseMs: 60_000).value()
        #expect(again.map(\.id) == Array(ids.prefix(3)))
        #expect(try await store.take(max: 0, nowMs: Self.now + 60_000, leaseMs: 1).value().isEmpty)
    }

    @Test("finish removes a taken push; release puts it back, due at once", arguments: StoreEngine.allCases)
    func finishAndRelease(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let store = try place.open(.generous)
        defer { store.close() }
        let ids = try await store.put((0..<4).map { samplePush($0, device: $0) }).value("put").ids
        let taken = try await store.take(max: 3, nowMs: Self.now, leaseMs: 60_000).value().map(\.id)
        #expect(taken == Array(ids.prefix(3)))
        try await store.finish([taken[0], taken[2]]).value("finish")
        try await store.release([taken[1]]).value("release")
        let next = try await store.take(max: 10, nowMs: Self.now, leaseMs: 60_000).value().map(\.id)
        #expect(next == [ids[1], ids[3]])
        let counts = try await store.counts().value()
        #expect(counts.entries == 2)
        #expect(counts.bytes == [1, 3].reduce(0) { $0 + samplePush($1, device: $1).storedBytes })
        // Finishing what is gone (finished twice, never held) changes nothing.
        try await store.finish([taken[0], HeldPushID(high: 0, low: 999_999)]).value("finish again")
        #expect(try await store.counts().value().entries == 2)
        try await store.finish(next).value()
        let empty = try await store.counts().value()
        #expect(empty == HeldCounts(entries: 0, bytes: 0, oldestArrivalMs: nil, leased: 0))
    }

    @Test("an expired push is never handed out, and dropExpired removes it, but not while it is out for delivery", arguments: StoreEngine.allCases)
    func expiry(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let store = try place.open(.generous)
        defer { store.close() }
        let short = samplePush(0, device: 0, arrivalMs: Self.now, ttl: 10)
        let leasedShort = samplePush(1, device: 1, arrivalMs: Self.now, ttl: 10)
        let long = samplePush(2, device: 2, arrivalMs: Self.now, ttl: 3_600)
        let ids = try await store.put([short, leasedShort, long]).value("put").ids
        #expect(short.expiresAtMs == Self.now + 10_000)
        #expect(short.apnsExpiration == (Self.now + 10_000) / 1000)
        // Leased before it expires; the other short one stays untaken.
        let early = try await store.take(max: 1, nowMs: Self.now, leaseMs: 3_600_000).value()
        #expect(early.map(\.id) == [ids[0]])
        let late = Self.now + 10_001
        #expect(try await store.take(max: 10, nowMs: late, leaseMs: 60_000).value().map(\.id) == [ids[2]])
        try await store.release([ids[2]]).value()
        // The taken one is spared until its taker lets it go.
        #expect(try await store.dropExpired(nowMs: late).value() == 1)
        try await store.release([ids[0]]).value()
        #expect(try await store.dropExpired(nowMs: late).value() == 1)
        #expect(try await store.dropExpired(nowMs: late).value() == 0)
        let counts = try await store.counts().value()
        #expect(counts.entries == 1)
        #expect(counts.leased == 0)
        #expect(counts.oldestArrivalMs == long.arrivalMs)
        #expect(try await store.take(max: 10, nowMs: late, leaseMs: 60_000).value().map(\.id) == [ids[2]])
    }

    @Test("the count cap refuses a whole put and nothing of it is stored; room comes back with a finish", arguments: StoreEngine.allCases)
    func countCap(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let store = try place.open(HoldLimits(maxEntries: 3, maxBytes: 1 << 30, maxPerDevice: 100))
        defer { store.close() }
        let ids = try await store.put([samplePush(0, device: 0), samplePush(1, device: 1)]).value("put").ids
        let over = await store.put([samplePush(2, device: 2), samplePush(3, device: 3)])
        #expect(over.failureCode == .capReached)
        #expect(try await store.counts().value().entries == 2)
        _ = try await store.put([samplePush(4, device: 4)]).value("the last place")
        #expect(await store.put([samplePush(5, device: 5)]).failureCode == .capReached)
        try await store.finish([ids[0]]).value()
        _ = try await store.put([samplePush(6, device: 6)]).value("after a finish")
        #expect(try await store.counts().value().entries == 3)
    }

    @Test("the byte cap refuses a put that would go over it", arguments: StoreEngine.allCases)
    func byteCap(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let pushes = (0..<3).map { samplePush($0, device: $0, payloadBytes: 1_000) }
        let cap = pushes[0].storedBytes + pushes[1].storedBytes
        let store = try place.open(HoldLimits(maxEntries: 1_000, maxBytes: cap, maxPerDevice: 100))
        defer { store.close() }
        _ = try await store.put([pushes[0]]).value("the first")
        _ = try await store.put([pushes[1]]).value("up to the cap exactly")
        #expect(await store.put([pushes[2]]).failureCode == .capReached)
        #expect(try await store.counts().value().bytes == cap)
        #expect(await store.put([samplePush(3, device: 3, payloadBytes: 0)]).failureCode == .capReached)
    }

    @Test("a device keeps its newest pushes up to its cap; the dropped are counted", arguments: StoreEngine.allCases)
    func perDeviceCap(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let store = try place.open(HoldLimits(maxEntries: 1_000, maxBytes: 1 << 30, maxPerDevice: 2))
        defer { store.close() }
        var receipts: [PutReceipt] = []
        for n in 0..<4 { receipts.append(try await store.put([samplePush(n, device: 7)]).value("put \(n)")) }
        receipts.append(try await store.put([samplePush(4, device: 8)]).value("another device"))
        #expect(receipts.map(\.droppedForDeviceCap) == [0, 0, 1, 1, 0])
        let held = try await store.take(max: 10, nowMs: Self.now, leaseMs: 60_000).value()
        #expect(held.map(\.push) == [samplePush(2, device: 7), samplePush(3, device: 7), samplePush(4, device: 8)])
        #expect(try await store.counts().value().entries == 3)
        // One put over the cap on its own keeps its own newest.
        let burst = try await store.put((10..<13).map { samplePush($0, device: 9) }).value()
        #expect(burst.droppedForDeviceCap == 1)
        let nines = try await store.take(max: 10, nowMs: Self.now, leaseMs: 60_000).value()
        #expect(nines.map(\.id) == Array(burst.ids.suffix(2)))
    }

    @Test("a push taken for delivery is never dropped for its device's cap: it may be reaching Apple", arguments: StoreEngine.allCases)
    func leasedSparedByDeviceCap(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let store = try place.open(HoldLimits(maxEntries: 1_000, maxBytes: 1 << 30, maxPerDevice: 2))
        defer { store.close() }
        let first = try await store.put([samplePush(0, device: 7)]).value().ids[0]
        let out = try await store.take(max: 1, nowMs: Self.now, leaseMs: 60_000).value()
        #expect(out.map(\.id) == [first])
        var dropped = 0
        for n in 1..<5 { dropped += try await store.put([samplePush(n, device: 7)]).value("put \(n)").droppedForDeviceCap }
        // The taken one stays; of the four after it the newest two do.
        #expect(dropped == 2)
        try await store.release([first]).value()
        let held = try await store.take(max: 10, nowMs: Self.now, leaseMs: 60_000).value()
        #expect(held.map(\.push) == [samplePush(0, device: 7), samplePush(3, device: 7), samplePush(4, device: 7)])
    }

    @Test("closed and opened again, the store holds everything it held, under the same ids", arguments: StoreEngine.allCases)
    func reopenKeepsEverything(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let pushes = (0..<50).map { samplePush($0, device: $0 % 7, payloadBytes: $0 * 10) }
        var ids: [HeldPushID] = []
        do {
            let store = try place.open(.generous)
            for chunk in stride(from: 0, to: pushes.count, by: 10) {
                ids += try await store.put(Array(pushes[chunk..<chunk + 10])).value().ids
            }
            // Taken and never finished when it closed: held all the same.
            _ = try await store.take(max: 5, nowMs: Self.now, leaseMs: 60_000).value()
            try await store.finish([ids[5]]).value()
            store.close()
            #expect(await store.put([samplePush(99)]).failureCode == .closed)
        }
        let store = try place.open(.generous)
        defer { store.close() }
        let counts = try await store.counts().value()
        #expect(counts.entries == 49)
        #expect(counts.bytes == pushes.enumerated().filter { $0.offset != 5 }.reduce(0) { $0 + $1.element.storedBytes })
        let held = try await store.take(max: 100, nowMs: Self.now, leaseMs: 60_000).value()
        var expected = Array(zip(ids, pushes))
        expected.remove(at: 5)
        #expect(held.map(\.id) == expected.map(\.0))
        #expect(held.map(\.push) == expected.map(\.1))
        // New ids come after every id the store ever gave, the finished one's too.
        let next = try await store.put([samplePush(100)]).value().ids
        #expect(next[0] > ids.last!)
    }
}

extension HeldPushStoreConformanceTests {
    @Test("close answers every call made before it, and what those puts stored is there after a reopen", arguments: StoreEngine.allCases)
    func closeAnswersWhatCameBefore(engine: StoreEngine) async throws {
        let place = try engine.place()
        defer { place.remove() }
        let store = try place.open(.generous)
        let answered = AnsweredPuts()
        for n in 0..<100 { store.put([samplePush(n, device: n)]) { answered.add($0) } }
        store.close()
        #expect(answered.count == 100, "every put was answered by the time close returned")
        #expect(answered.failures == 0)
        let reopened = try place.open(.generous)
        defer { reopened.close() }
        #expect(try await reopened.counts().value().entries == 100)
    }
}

extension Result where Failure == PushStoreError {
    /// The failure's code, nil on success.
    var failureCode: PushStoreError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
