import Testing
@testable import EventLoop

@Suite("The loop's registration table")
struct RegistrationTableTests {
    final class Thing {
        let name: String
        init(_ name: String) { self.name = name }
    }

    @Test("each token finds its own object, and no token is 0 (the eventfd's)")
    func tokensFindTheirObjects() {
        var table = RegistrationTable<Thing>()
        let things = (0..<100).map { Thing("t\($0)") }
        let tokens = things.map { table.insert($0) }
        #expect(table.count == 100)
        #expect(Set(tokens).count == 100)
        #expect(!tokens.contains(0))
        for (thing, token) in zip(things, tokens) {
            #expect(table.object(for: token) === thing)
        }
        // Tokens never issued: past the end, and a live index under another generation.
        #expect(table.object(for: 100) == nil)
        #expect(table.object(for: UInt64.max) == nil)
        #expect(table.object(for: tokens[5] &+ (1 << 32)) == nil)
        #expect(table.object(for: tokens[5] & 0xFFFF_FFFF) == nil)
    }

    @Test("a removed object's token finds nothing, even after a new object took its slot")
    func staleTokensFindNothing() {
        var table = RegistrationTable<Thing>()
        let a = Thing("a"), b = Thing("b"), c = Thing("c")
        let ta = table.insert(a)
        let tb = table.insert(b)
        table.remove(ta)
        #expect(table.object(for: ta) == nil)
        #expect(table.object(for: tb) === b)
        #expect(table.count == 1)
        // The freed slot is reused, under a new token: the old one must not reach `c`.
        let tc = table.insert(c)
        #expect(tc & 0xFFFF_FFFF == ta & 0xFFFF_FFFF)
        #expect(tc != ta)
        #expect(table.object(for: ta) == nil)
        #expect(table.object(for: tc) === c)
        // Removing through the stale token leaves the slot's new owner in place.
        table.remove(ta)
        #expect(table.object(for: tc) === c)
        #expect(table.count == 2)
        // Removing twice is harmless.
        table.remove(tb)
        table.remove(tb)
        #expect(table.count == 1)
        #expect(table.object(for: tc) === c)
    }

    @Test("slots are reused before the table grows, and growth keeps every token valid")
    func reuseAndGrowth() {
        var table = RegistrationTable<Thing>()
        var live: [(UInt64, Thing)] = []
        var stale: [UInt64] = []
        var highestIndex: UInt64 = 0
        // Churn: insert 3, remove 2, many times; at most `live.count` slots are ever needed.
        for round in 0..<500 {
            for k in 0..<3 {
                let thing = Thing("\(round).\(k)")
                let token = table.insert(thing)
                highestIndex = max(highestIndex, token & 0xFFFF_FFFF)
                live.append((token, thing))
            }
            for _ in 0..<2 {
                let (token, _) = live.remove(at: (round * 7) % live.count)
                table.remove(token)
                stale.append(token)
            }
        }
        #expect(table.count == live.count)
        #expect(highestIndex < UInt64(live.count) + 3)
        for (token, thing) in live { #expect(table.object(for: token) === thing) }
        for token in stale { #expect(table.object(for: token) == nil) }
    }

    @Test("removing every object while walking a snapshot of them empties the table")
    func removalWhileIterating() {
        var table = RegistrationTable<Thing>()
        var tokens: [ObjectIdentifier: UInt64] = [:]
        for i in 0..<20 {
            let thing = Thing("\(i)")
            tokens[ObjectIdentifier(thing)] = table.insert(thing)
        }
        table.remove(tokens.values.min()!)
        let snapshot = table.objects
        #expect(snapshot.count == 19)
        for thing in snapshot { table.remove(tokens[ObjectIdentifier(thing)]!) }
        #expect(table.count == 0)
        #expect(table.objects.isEmpty)
        for token in tokens.values { #expect(table.object(for: token) == nil) }
    }

    @Test("removeAll invalidates every token issued before")
    func removeAllInvalidates() {
        var table = RegistrationTable<Thing>()
        let things = (0..<5).map { Thing("\($0)") }
        let tokens = things.map { table.insert($0) }
        table.removeAll()
        #expect(table.count == 0)
        for token in tokens { #expect(table.object(for: token) == nil) }
        let again = table.insert(Thing("new"))
        #expect(!tokens.contains(again))
    }

    @Test("the generation wraps from 2^32 - 1 to 1, never to 0")
    func generationWrapsPastZero() {
        #expect(RegistrationTable<Thing>.generation(after: 1) == 2)
        #expect(RegistrationTable<Thing>.generation(after: UInt32.max - 1) == UInt32.max)
        #expect(RegistrationTable<Thing>.generation(after: UInt32.max) == 1)
    }
}
