/// A client session's streams by id, in an open-addressed table whose hash is the id itself.
///
/// The streams a client opens have odd ids that rise by two, one after another, so the streams
/// in flight fill neighbouring slots: a lookup is an index and a compare, where a Dictionary
/// hashed every id with SipHash (about 15 lookups per request, 1.7k instructions). Only our own
/// ids are keys, so nobody can choose colliding ones; a stream that outlives thousands of later
/// ones costs a longer probe, never a wrong answer. Linear probing, with backward-shift deletion
/// (no tombstones), at most half full; the table shrinks again after a burst.
package struct StreamTable<Value: AnyObject> {
    private struct Slot {
        var id: Int32
        var value: Value?
    }

    private var slots: [Slot]
    /// Slots in all (a power of two), for tests of growing and shrinking.
    package var capacity: Int { slots.count }
    package private(set) var count = 0

    package static var minimumCapacity: Int { 16 }

    package init() {
        slots = Array(repeating: Slot(id: 0, value: nil), count: Self.minimumCapacity)
    }

    package var isEmpty: Bool { count == 0 }

    /// Ids in ascending order (the order the streams were opened).
    package var sortedIDs: [Int32] {
        slots.compactMap { $0.value == nil ? nil : $0.id }.sorted()
    }

    package subscript(id: Int32) -> Value? {
        get {
            let mask = slots.count - 1
            var index = Self.home(id, mask)
            while let value = slots[index].value {
                if slots[index].id == id { return value }
                index = (index + 1) & mask
            }
            return nil
        }
        set {
            if let newValue { insert(newValue, for: id) } else { _ = removeValue(forKey: id) }
        }
    }

    @discardableResult
    package mutating func removeValue(forKey id: Int32) -> Value? {
        let mask = slots.count - 1
        var index = Self.home(id, mask)
        while slots[index].value != nil {
            if slots[index].id == id {
                let removed = slots[index].value
                closeGap(at: index)
                count -= 1
                if count * 8 < slots.count && slots.count > Self.minimumCapacity { resize(to: slots.count / 2) }
                return removed
            }
            index = (index + 1) & mask
        }
        return nil
    }

    package mutating func removeAll() {
        slots = Array(repeating: Slot(id: 0, value: nil), count: Self.minimumCapacity)
        count = 0
    }

    private mutating func insert(_ value: Value, for id: Int32) {
        let mask = slots.count - 1
        var index = Self.home(id, mask)
        while slots[index].value != nil {
            if slots[index].id == id {
                slots[index].value = value
                return
            }
            index = (index + 1) & mask
        }
        slots[index] = Slot(id: id, value: value)
        count += 1
        if count * 2 > slots.count { resize(to: slots.count * 2) }
    }

    /// Empties `index` and moves later members of the probe run back into the gap, so every
    /// member stays reachable from its home slot without a run-ending hole before it.
    private mutating func closeGap(at start: Int) {
        let mask = slots.count - 1
        var gap = start
        var index = (start + 1) & mask
        while slots[index].value != nil {
            let home = Self.home(slots[index].id, mask)
            // The member may fill the gap unless its home lies cyclically in (gap, index].
            let homeAfterGap = (index - home) & mask < (index - gap) & mask
            if !homeAfterGap {
                slots[gap] = slots[index]
                gap = index
            }
            index = (index + 1) & mask
        }
        slots[gap] = Slot(id: 0, value: nil)
    }

    private mutating func resize(to capacity: Int) {
        let old = slots
        slots = Array(repeating: Slot(id: 0, value: nil), count: capacity)
        let mask = capacity - 1
        for slot in old where slot.value != nil {
            var index = Self.home(slot.id, mask)
            while slots[index].value != nil { index = (index + 1) & mask }
            slots[index] = slot
        }
    }

    /// Odd client ids rise by two: halving them makes consecutive streams consecutive slots.
    private static func home(_ id: Int32, _ mask: Int) -> Int {
        Int(UInt32(bitPattern: id) >> 1) & mask
    }
}
