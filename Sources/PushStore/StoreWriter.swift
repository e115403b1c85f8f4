/// The store's writer: everything that touches the database, on the writer thread only. One
/// `serve` call is one turn: releases (memory only), then every write in one transaction, then
/// the reads, so a take or a count sees what was written before it in the same turn.
final class StoreWriter {
    private let table: HeldTable
    private let limits: HoldLimits
    private let stats: StoreStatistics
    /// What is committed: pushes held and their bytes (counted once at open, then kept here).
    private var entries: Int
    private var bytes: Int
    /// Taken pushes and when each lease runs out (Unix ms).
    private var leases: [HeldPushID: Int64] = [:]

    init(table: HeldTable, limits: HoldLimits, entries: Int, bytes: Int, stats: StoreStatistics) {
        self.table = table
        self.limits = limits
        self.entries = entries
        self.bytes = bytes
        self.stats = stats
    }

    func serve(_ batch: [StoreRequest]) {
        var writes = Writes()
        for request in batch {
            switch request {
            case .put(let pushes, let completion): writes.puts.append((pushes, completion))
            case .finish(let ids, let completion): writes.finishes.append((ids, completion))
            case .dropExpired(let nowMs, let completion): writes.drops.append((nowMs, completion))
            case .release(let ids, let completion):
                for id in ids { leases[id] = nil }
                completion(.success(()))
            case .take, .counts, .onTable: break
            }
        }
        if !writes.isEmpty { write(writes) }
        for request in batch {
            switch request {
            case .take(let max, let nowMs, let leaseMs, let completion): completion(take(max: max, nowMs: nowMs, leaseMs: leaseMs))
            case .counts(let completion): completion(counts())
            case .onTable(let body): body(table)
            case .put, .finish, .dropExpired, .release: break
            }
        }
    }

    // MARK: - Writes

    /// One turn's writes and who waits for each.
    private struct Writes {
        var puts: [([HeldPush], @Sendable (Result<PutReceipt, PushStoreError>) -> Void)] = []
        var finishes: [([HeldPushID], @Sendable (Result<Void, PushStoreError>) -> Void)] = []
        var drops: [(Int64, @Sendable (Result<Int, PushStoreError>) -> Void)] = []
        var isEmpty: Bool { puts.isEmpty && finishes.isEmpty && drops.isEmpty }
    }

    /// What a transaction changed, applied to the writer's counts only once it commits.
    private struct Change {
        var entries = 0
        var bytes = 0
        var removed: [HeldPushID] = []
        var putResults: [Result<PutReceipt, PushStoreError>] = []
        var dropped: [Int] = []

        mutating func remove(_ id: HeldPushID, bytes gone: Int) {
            entries -= 1
            bytes -= gone
            removed.append(id)
        }
    }

    /// Commits `writes` in one transaction and answers each. When that fails with both puts and
    /// removals in it, the removals are tried alone and then the puts: a full disk that refuses
    /// the puts must not keep finishes and expiries from freeing its space.
    private func write(_ writes: Writes) {
        let removals = Writes(finishes: writes.finishes, drops: writes.drops)
        let puts = Writes(puts: writes.puts)
        switch transaction(writes) {
        case .success(let change): answer(writes, with: .success(change))
        case .failure where !removals.isEmpty && !puts.isEmpty:
            answer(removals, with: transaction(removals))
            answer(puts, with: transaction(puts))
        case .failure(let error): answer(writes, with: .failure(error))
        }
    }

    private func transaction(_ writes: Writes) -> Result<Change, PushStoreError> {
        var change = Change()
        do throws(PushStoreError) {
            try table.beginTransaction()
            for (ids, _) in writes.finishes {
                for id in ids { if let gone = try table.delete(id) { change.remove(id, bytes: gone) } }
            }
            for (nowMs, _) in writes.drops {
                // A leased push is spared, as by the device cap: its answer, or a sweep after its
                // lease ends, settles it.
                let gone = try table.deleteExpired(nowMs: nowMs, sparing: { leases[$0] != nil })
                for item in gone { change.remove(item.id, bytes: item.bytes) }
                change.dropped.append(gone.count)
            }
            for (pushes, _) in writes.puts { change.putResults.append(try put(pushes, into: &change)) }
            try table.commitTransaction()
        } catch {
            table.rollbackTransaction()
            return .failure(error)
        }
        stats.commits.add(1, ordering: .relaxed)
        entries += change.entries
        bytes += change.bytes
        for id in change.removed { leases[id] = nil }
        return .success(change)
    }

    /// Inserts one put's pushes unless they would take the store over a cap (a value, not an
    /// error: the transaction goes on for the other puts), then trims their devices.
    private func put(_ pushes: [HeldPush], into change: inout Change) throws(PushStoreError) -> Result<PutReceipt, PushStoreError> {
        let addedBytes = pushes.reduce(0) { $0 + $1.storedBytes }
        let heldAfter = entries + change.entries + pushes.count
        let bytesAfter = bytes + change.bytes + addedBytes
        guard heldAfter <= limits.maxEntries else {
            return .failure(PushStoreError(.capReached, "the store holds \(entries + change.entries) pushes; its cap is \(limits.maxEntries)"))
        }
        guard bytesAfter <= limits.maxBytes else {
            return .failure(PushStoreError(.capReached, "the store holds \(bytes + change.bytes) bytes; its cap is \(limits.maxBytes)"))
        }
        var ids: [HeldPushID] = []
        ids.reserveCapacity(pushes.count)
        for push in pushes {
            ids.append(try table.insert(push))
            change.entries += 1
            change.bytes += push.storedBytes
        }
        var dropped = 0
        var devices = Set<String>()
        // A device cap at or above the store's own can never bite: no per-device reads then.
        for push in pushes where limits.maxPerDevice < limits.maxEntries && devices.insert(push.deviceToken).inserted {
            // A push out for delivery is spared: it may reach Apple in a moment, and counted as
            // dropped it would be counted twice.
            for victim in try table.trim(device: push.deviceToken, keep: limits.maxPerDevice, sparing: { leases[$0] != nil }) {
                change.remove(victim.id, bytes: victim.bytes)
                dropped += 1
            }
        }
        return .success(PutReceipt(ids: ids, droppedForDeviceCap: dropped))
    }

    private func answer(_ writes: Writes, with outcome: Result<Change, PushStoreError>) {
        switch outcome {
        case .success(let change):
            for (index, (_, completion)) in writes.puts.enumerated() { completion(change.putResults[index]) }
            for (_, completion) in writes.finishes { completion(.success(())) }
            for (index, (_, completion)) in writes.drops.enumerated() { completion(.success(change.dropped[index])) }
        case .failure(let error):
            for (_, completion) in writes.puts { completion(.failure(error)) }
            for (_, completion) in writes.finishes { completion(.failure(error)) }
            for (_, completion) in writes.drops { completion(.failure(error)) }
        }
    }

    // MARK: - Reads

    /// The oldest due pushes. Leases that ran out are forgotten first; the page read is as long
    /// as what is wanted plus every lease, so the pushes it skips (leased ones) cannot leave it
    /// short while due ones remain.
    private func take(max: Int, nowMs: Int64, leaseMs: Int64) -> Result<[StoredPush], PushStoreError> {
        guard max > 0 else { return .success([]) }
        leases = leases.filter { $0.value > nowMs }
        do throws(PushStoreError) {
            let page = try table.due(after: HeldPushID(low: 0), nowMs: nowMs, limit: max + leases.count)
            var taken: [StoredPush] = []
            for stored in page where leases[stored.id] == nil {
                taken.append(stored)
                if taken.count == max { break }
            }
            let until = nowMs.addingReportingOverflow(leaseMs)
            for stored in taken { leases[stored.id] = until.overflow ? .max : until.partialValue }
            return .success(taken)
        } catch {
            return .failure(error)
        }
    }

    private func counts() -> Result<HeldCounts, PushStoreError> {
        do throws(PushStoreError) {
            return .success(HeldCounts(entries: entries, bytes: bytes, oldestArrivalMs: try table.oldestArrival(), leased: leases.count))
        } catch {
            return .failure(error)
        }
    }
}
