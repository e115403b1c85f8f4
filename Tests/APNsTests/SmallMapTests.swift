import Testing
@testable import APNs

/// `SmallMap` stands in for a `Dictionary` of the pool's connections: the same random
/// inserts, updates, removals and in-place changes must leave both holding the same entries.
@Suite("SmallMap")
struct SmallMapTests {
    @Test("a small map answers every lookup as a dictionary does, over random operations")
    func matchesDictionary() {
        var rng = SplitMix64(state: 14)
        var map = SmallMap<ConnectionID, Int>()
        var dictionary: [ConnectionID: Int] = [:]
        for step in 0..<5_000 {
            // Few keys, as in a pool, so that every operation often finds its key present.
            let key = ConnectionID(rng.next() % 8)
            let value = Int(truncatingIfNeeded: rng.next() % 1000)
            switch rng.next() % 5 {
            case 0:
                map[key] = value
                dictionary[key] = value
            case 1:
                map[key] = nil
                dictionary[key] = nil
            case 2:
                #expect(map.removeValue(forKey: key) == dictionary.removeValue(forKey: key), "step \(step)")
            case 3:
                if let index = map.index(forKey: key) { map.values[index] += 1 }
                dictionary[key]? += 1
            default:
                map[key]? -= 1
                dictionary[key]? -= 1
            }
            #expect(map[key] == dictionary[key], "step \(step)")
            #expect(map.count == dictionary.count, "step \(step)")
            #expect(map.isEmpty == dictionary.isEmpty, "step \(step)")
        }
        for key in (0..<8).map({ ConnectionID($0) }) {
            #expect(map[key] == dictionary[key])
            #expect((map.index(forKey: key) != nil) == (dictionary[key] != nil))
        }
        #expect(Set(map.keys) == Set(dictionary.keys))
        #expect(map.keys.count == map.values.count)
    }

    @Test("keys come back in the order they were added, and a filter keeps that order")
    func keepsInsertionOrder() {
        var map = SmallMap<ConnectionID, String>()
        for id in [5, 2, 9, 7] as [UInt64] { map[ConnectionID(id)] = "conn \(id)" }
        map[ConnectionID(2)] = nil
        map[ConnectionID(3)] = "conn 3"
        #expect(map.keys == [5, 9, 7, 3].map { ConnectionID($0) })
        #expect(map.values == ["conn 5", "conn 9", "conn 7", "conn 3"])
        #expect(map.keys { $0 != "conn 9" } == [5, 7, 3].map { ConnectionID($0) })
    }
}
