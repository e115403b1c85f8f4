import Basics
import Testing
import HTTP2

/// A client session's streams by id (`IDTable` keyed by `Int32`, odd ids halved) must answer
/// exactly as a Dictionary would, whatever order streams open and close in: these replay id
/// patterns against both and compare after every step.
@Suite("stream table")
struct StreamTableTests {
    final class Box {
        let id: Int32
        init(_ id: Int32) { self.id = id }
    }

    private struct Pair {
        var table = IDTable<Int32, Box>()
        var reference: [Int32: Box] = [:]

        mutating func open(_ id: Int32) {
            let box = Box(id)
            table[id] = box
            reference[id] = box
        }

        mutating func close(_ id: Int32) {
            #expect(table.removeValue(forKey: id) === reference.removeValue(forKey: id))
        }

        func check(probing ids: some Sequence<Int32>) {
            #expect(table.count == reference.count)
            for id in ids { #expect(table[id] === reference[id], "id \(id)") }
            #expect(table.sortedKeys == reference.keys.sorted())
        }
    }

    @Test("streams opened in order and closed in a scrambled order are found, and only they, at every step")
    func scrambledCloses() {
        var pair = Pair()
        let n: Int32 = 600
        let ids = (0..<n).map { 2 * $0 + 1 }
        for id in ids { pair.open(id) }
        pair.check(probing: ids)
        // i * 7 mod 600 visits every index once (7 and 600 are coprime): closes jump around runs.
        for step in 0..<Int(n) {
            pair.close(ids[(step * 7) % Int(n)])
            if step % 37 == 0 { pair.check(probing: ids + [0, 2, 9_999]) }
        }
        pair.check(probing: ids)
        #expect(pair.table.isEmpty)
        #expect(pair.table.capacity == IDTable<Int32, Box>().minimumCapacity, "a burst does not leave the table big")
    }

    @Test("a window of streams sliding over a million ids, with one stream that never closes, keeps every answer right and the table small")
    func slidingWindowWithStraggler() {
        var pair = Pair()
        pair.open(1)  // outlives everything after it: its home slot is overtaken again and again
        var next: Int32 = 3
        var open: [Int32] = []
        while next < 1_000_000 {
            for _ in 0..<5 {
                pair.open(next)
                open.append(next)
                next += 2
            }
            while open.count > 40 { pair.close(open.removeFirst()) }
            if next % 20_001 < 10 { pair.check(probing: open + [1, next, next + 2, open[0] - 2]) }
        }
        pair.check(probing: open + [1])
        #expect(pair.table.capacity <= 128)
    }

    @Test("setting nil removes, setting again replaces, and a missing id is nil")
    func subscriptSetters() {
        var table = IDTable<Int32, Box>()
        let first = Box(5), second = Box(5)
        table[5] = first
        table[5] = second
        #expect(table[5] === second && table.count == 1)
        table[5] = nil
        #expect(table[5] == nil && table.count == 0)
        #expect(table.removeValue(forKey: 5) == nil)
    }
}
