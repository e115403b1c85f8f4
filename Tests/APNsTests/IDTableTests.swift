import Basics
import Testing
@testable import APNs

/// `IDTable` stands in for the `Dictionary`s of pushes and streams by push the pool machine kept:
/// whatever order ids come and go in, it must answer as a dictionary does.
@Suite("IDTable")
struct IDTableTests {
    private struct Pair {
        var table = IDTable<PushID, Int>()
        var reference: [PushID: Int] = [:]

        mutating func set(_ id: UInt64, _ value: Int?) {
            table[PushID(id)] = value
            reference[PushID(id)] = value
        }

        mutating func remove(_ id: UInt64) {
            #expect(table.removeValue(forKey: PushID(id)) == reference.removeValue(forKey: PushID(id)), "id \(id)")
        }

        func check(probing ids: some Sequence<UInt64>) {
            #expect(table.count == reference.count)
            #expect(table.isEmpty == reference.isEmpty)
            for id in ids { #expect(table[PushID(id)] == reference[PushID(id)], "id \(id)") }
            #expect(table.sortedKeys == reference.keys.sorted())
            var seen: [PushID: Int] = [:]
            table.forEach { key, value in
                #expect(seen[key] == nil, "each entry once")
                seen[key] = value
            }
            #expect(seen == reference)
        }
    }

    @Test("random inserts, replacements, removals and in-place updates answer as a dictionary does")
    func matchesDictionary() {
        var rng = SplitMix64(state: 21)
        var pair = Pair()
        for step in 0..<6_000 {
            // Ids near a moving window, and some far off, so probe runs wrap and collide.
            let base = UInt64(step / 4)
            let id = rng.next() % 10 == 0 ? rng.next() % 1_000_000 : base + rng.next() % 48
            let value = Int(truncatingIfNeeded: rng.next() % 1000)
            switch rng.next() % 5 {
            case 0, 1:
                pair.set(id, value)
            case 2:
                pair.remove(id)
            case 3:
                let old = pair.reference[PushID(id)]
                let returned = pair.table.update(PushID(id)) { (stored: inout Int) -> Int in
                    stored += 1
                    return stored
                }
                pair.reference[PushID(id)]? += 1
                #expect(returned == old.map { $0 + 1 }, "update returns the body's result, nil when absent")
            default:
                pair.set(id, nil)
            }
            #expect(pair.table[PushID(id)] == pair.reference[PushID(id)], "step \(step)")
            if step % 499 == 0 { pair.check(probing: (base..<(base + 64)).map { $0 }) }
        }
        pair.check(probing: pair.reference.keys.map(\.value))
    }

    @Test("ids that share a home slot (equal modulo the capacity) are told apart, and removing one keeps the others reachable")
    func wrapAroundCollisions() {
        var pair = Pair()
        let capacity = UInt64(IDTable<PushID, Int>().minimumCapacity)
        // Four ids with the same home slot, then ids whose home lies in their probe run.
        let colliding: [UInt64] = [3, 3 + capacity, 3 + 2 * capacity, 3 + 4 * capacity]
        for (index, id) in colliding.enumerated() { pair.set(id, index) }
        pair.set(4, 40)
        pair.set(5, 50)
        // A stale id: its home slot is taken by another id, so the lookup must compare the id.
        #expect(pair.table[PushID(3 + 3 * capacity)] == nil)
        pair.check(probing: colliding + [4, 5, 3 + 3 * capacity])
        pair.remove(3)
        pair.check(probing: colliding + [4, 5])
        pair.remove(3 + 2 * capacity)
        pair.check(probing: colliding + [4, 5])
        pair.set(3, 9)
        pair.check(probing: colliding + [4, 5])
        // The table's last slot wraps to the first.
        pair.set(capacity - 1, 1)
        pair.set(2 * capacity - 1, 2)
        pair.set(0, 3)
        pair.check(probing: [capacity - 1, 2 * capacity - 1, 0, capacity])
        pair.remove(capacity - 1)
        pair.check(probing: [capacity - 1, 2 * capacity - 1, 0, capacity])
    }

    @Test("a burst grows the table, emptying it shrinks it back, and a straggler that outlives a hundred thousand later ids stays found")
    func growthShrinkAndStraggler() {
        var pair = Pair()
        for id in 1...5_000 as ClosedRange<UInt64> { pair.set(id, Int(id)) }
        #expect(pair.table.capacity >= 10_000, "at most half full")
        pair.check(probing: 0...5_001)
        for id in 2...5_000 as ClosedRange<UInt64> { pair.remove(id) }
        #expect(pair.table.capacity == IDTable<PushID, Int>().minimumCapacity, "a burst does not leave the table big")
        // Id 1 stays while a window of 40 slides past it, its home slot overtaken again and again.
        var open: [UInt64] = []
        var next: UInt64 = 5_001
        while next < 100_000 {
            for _ in 0..<5 {
                pair.set(next, Int(next))
                open.append(next)
                next += 1
            }
            while open.count > 40 { pair.remove(open.removeFirst()) }
            if next % 10_007 < 5 { pair.check(probing: open + [1, next, open[0] - 1]) }
        }
        pair.check(probing: open + [1])
        #expect(pair.table[PushID(1)] == 1)
        #expect(pair.table.capacity <= 128)
        pair.table.removeAll()
        #expect(pair.table.isEmpty && pair.table[PushID(1)] == nil)
    }
}
