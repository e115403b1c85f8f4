import Testing
@testable import APNs

/// `PushID` and `ConnectionID` hash in one shot, as their numbers do: tables keyed by them must
/// behave exactly like tables keyed by the numbers.
@Suite("Pool id hashing")
struct PoolIDHashingTests {
    @Test("equal ids hash equal, and a table keyed by ids agrees with one keyed by their numbers")
    func tablesAgree() {
        var random = SplitMix64(state: 6)
        var pushes: [PushID: Int] = [:], connections: [ConnectionID: Int] = [:], reference: [UInt64: Int] = [:]
        for step in 0..<5000 {
            // Small dense ids like the pool's, and now and then a large one.
            let key = random.next() % 8 == 0 ? random.next() : random.next() % 300
            #expect(PushID(key).hashValue == PushID(key).hashValue)
            #expect(ConnectionID(key).hashValue == ConnectionID(key).hashValue)
            if random.next() % 3 == 0 {
                #expect(pushes.removeValue(forKey: PushID(key)) == reference[key])
                #expect(connections.removeValue(forKey: ConnectionID(key)) == reference.removeValue(forKey: key))
            } else {
                pushes[PushID(key)] = step
                connections[ConnectionID(key)] = step
                reference[key] = step
            }
            #expect(pushes[PushID(key)] == reference[key])
            #expect(connections[ConnectionID(key)] == reference[key])
        }
        #expect(pushes.count == reference.count && connections.count == reference.count)
        #expect(Set(pushes.keys.map(\.value)) == Set(reference.keys))
        #expect(Set(connections.keys.map(\.value)) == Set(reference.keys))
        for (key, value) in reference {
            #expect(pushes[PushID(key)] == value && connections[ConnectionID(key)] == value)
        }
    }
}
