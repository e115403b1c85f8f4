/// What a loop's epoll events point at: a slab of slots, addressed by the 64-bit token each
/// fd is registered with in epoll (its `data` word).
///
/// A token is the slot's index in its low 32 bits and the slot's generation in its high 32.
/// Removing an object bumps its slot's generation, so a token that outlived its object (an
/// event already fetched for a socket that an earlier event of the same batch closed, and
/// whose slot a new socket took) finds nothing instead of the new object: a hit is one array
/// read and a compare, where the dictionary this replaces hashed every event.
/// Generations start at 1, so no token is 0, which the loop keeps for its eventfd.
struct RegistrationTable<Object> {
    private struct Slot {
        var object: Object?
        var generation: UInt32
    }

    private var slots: [Slot] = []
    /// Indexes of empty slots, reused last-freed first.
    private var free: [UInt32] = []
    private(set) var count = 0

    /// Stores `object` and returns its token.
    mutating func insert(_ object: Object) -> UInt64 {
        let index: UInt32
        if let reused = free.popLast() {
            index = reused
            slots[Int(index)].object = object
        } else {
            precondition(slots.count < Int(UInt32.max), "more than 2^32 registrations on one loop")
            index = UInt32(slots.count)
            slots.append(Slot(object: object, generation: 1))
        }
        count += 1
        return UInt64(slots[Int(index)].generation) << 32 | UInt64(index)
    }

    /// The object `token` was issued for, or nil once it was removed.
    func object(for token: UInt64) -> Object? {
        let index = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
        guard index < slots.count, slots[index].generation == UInt32(truncatingIfNeeded: token >> 32) else { return nil }
        return slots[index].object
    }

    /// Forgets the object of `token`; a token already removed (or never issued) changes nothing.
    mutating func remove(_ token: UInt64) {
        let index = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
        guard index < slots.count, slots[index].object != nil,
              slots[index].generation == UInt32(truncatingIfNeeded: token >> 32) else { return }
        slots[index].object = nil
        slots[index].generation = Self.generation(after: slots[index].generation)
        free.append(UInt32(index))
        count -= 1
    }

    /// The generation a slot takes when its object is removed. Wrapping past 2^32 reuses
    /// skips 0, so a token is never 0.
    static func generation(after generation: UInt32) -> UInt32 {
        generation == .max ? 1 : generation + 1
    }

    /// Every stored object, in slot order.
    var objects: [Object] { slots.compactMap(\.object) }

    /// Forgets every object; tokens issued before find nothing afterwards.
    mutating func removeAll() {
        for index in slots.indices where slots[index].object != nil {
            remove(UInt64(slots[index].generation) << 32 | UInt64(index))
        }
    }
}
