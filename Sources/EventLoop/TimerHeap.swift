/// A binary min-heap of deadlines. Pure: the caller passes `now`, so ordering and expiry
/// are tested without sleeping. Ties fire in scheduling order (a sequence number breaks them).
/// Deadlines are `LoopClock` nanoseconds.
struct TimerHeap<Element> {
    typealias Instant = Int64
    private struct Entry { let deadline: Instant; let seq: UInt64; let element: Element }
    private var entries: [Entry] = []
    private var nextSeq: UInt64 = 0

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    /// The earliest deadline, which bounds how long the loop may sleep in epoll_wait.
    var nearestDeadline: Instant? { entries.first?.deadline }

    mutating func insert(_ element: Element, deadline: Instant) {
        entries.append(Entry(deadline: deadline, seq: nextSeq, element: element))
        nextSeq &+= 1
        siftUp(entries.count - 1)
    }

    /// Removes and returns the earliest element if its deadline is at or before `now`.
    mutating func popDue(now: Instant) -> Element? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return first.element
    }

    mutating func removeAll() { entries.removeAll() }

    /// Drops every element `shouldRemove` picks and rebuilds the heap in O(n); the rest keep
    /// their deadlines and their tie order.
    mutating func removeAll(where shouldRemove: (Element) -> Bool) {
        entries.removeAll { shouldRemove($0.element) }
        var i = entries.count / 2
        while i > 0 {
            i -= 1
            siftDown(i)
        }
    }

    // The sifts work on the raw buffer: through the array, every comparison copied two entries
    // and retained and released their elements, and the heap holds every pending push deadline.

    @inline(__always)
    private static func less(_ x: UnsafeMutablePointer<Entry>, _ y: UnsafeMutablePointer<Entry>) -> Bool {
        x.pointee.deadline < y.pointee.deadline || (x.pointee.deadline == y.pointee.deadline && x.pointee.seq < y.pointee.seq)
    }

    private mutating func siftUp(_ index: Int) {
        entries.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var i = index
            while i > 0 {
                let parent = (i - 1) / 2
                guard Self.less(base + i, base + parent) else { return }
                buffer.swapAt(i, parent)
                i = parent
            }
        }
    }

    private mutating func siftDown(_ index: Int) {
        entries.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            let count = buffer.count
            var i = index
            while true {
                let l = 2 * i + 1, r = l + 1
                var smallest = i
                if l < count && Self.less(base + l, base + smallest) { smallest = l }
                if r < count && Self.less(base + r, base + smallest) { smallest = r }
                if smallest == i { return }
                buffer.swapAt(i, smallest)
                i = smallest
            }
        }
    }
}
