/// A key handed out in sequence: the ids in use at once are neighbours in `sequence`.
public protocol SequentialKey: Comparable {
    /// Consecutive for consecutive keys; the table's home slot is this modulo its capacity.
    var sequence: UInt64 { get }
}

/// An HTTP/2 client's stream ids: odd and rising by two, so halved, consecutive streams take
/// consecutive slots.
extension Int32: SequentialKey {
    @inlinable
    public var sequence: UInt64 { UInt64(UInt32(bitPattern: self) >> 1) }
}

/// A map from ids handed out in sequence (the pool machine's pushes and each connection's
/// streams by push, an HTTP/2 client session's streams by stream id) to their values, in an
/// open-addressed table whose hash is the id itself.
///
/// The ids in use at once are neighbours, so they fill neighbouring slots: a lookup is an index
/// and a compare of the id found there, where a `Dictionary` hashes the id with SipHash at every
/// lookup, insert and removal. Only our own ids are keys, so nobody can choose colliding ones;
/// an entry that outlives thousands of later ones costs a longer probe, never a wrong answer.
/// Linear probing with backward-shift deletion (no tombstones), at most half full; the table
/// shrinks again after a burst (below a sixteenth full), never below `minimumCapacity`.
///
/// Public and inlinable throughout, though no product's API: its users are in other modules,
/// where this compiler specialises a generic type's members only when they are `public`
/// `@inlinable` (`package` ones stay unspecialised, every key and value reached through witness
/// tables and metadata lookups: 5 % of the relay's samples, 4 µs of CPU per push).
public struct IDTable<Key: SequentialKey, Value> {
    /// Which key each slot holds (nil: empty). Apart from the values, so that a probe reads
    /// small keys only and a value is moved once per operation, not with its key at every step.
    @usableFromInline var keys: [Key?]
    /// The value of the key in the same slot; nil exactly where `keys` is.
    @usableFromInline var values: [Value?]
    @usableFromInline var storedCount = 0
    @inlinable
    public var count: Int { storedCount }
    /// The fewest slots it keeps (a power of two): room for the usual entries, so that a load
    /// that comes and goes does not make the table grow and shrink over and over (each a new
    /// array, every entry moved).
    public let minimumCapacity: Int

    @inlinable
    public init(minimumCapacity: Int = 16) {
        precondition(minimumCapacity > 0 && minimumCapacity & (minimumCapacity - 1) == 0, "a power of two")
        self.minimumCapacity = minimumCapacity
        keys = Array(repeating: nil, count: minimumCapacity)
        values = Array(repeating: nil, count: minimumCapacity)
    }

    /// Slots in all (a power of two), for tests of growing and shrinking.
    @inlinable
    public var capacity: Int { keys.count }
    @inlinable
    public var isEmpty: Bool { count == 0 }

    @inlinable
    public subscript(key: Key) -> Value? {
        get {
            guard let index = find(key) else { return nil }
            return values[index]
        }
        set {
            if let newValue { insert(newValue, for: key) } else { removeValue(forKey: key) }
        }
    }

    /// Changes the value of `key` where it is stored (no copy taken out and written back) and
    /// returns what `body` returns; nil, and `body` not called, when the key is absent.
    @inlinable
    public mutating func update<R>(_ key: Key, _ body: (inout Value) -> R) -> R? {
        guard let index = find(key) else { return nil }
        return body(&values[index]!)
    }

    @discardableResult
    @inlinable
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let index = find(key) else { return nil }
        // Moved out, not copied: a copy retained every reference the value holds, and the
        // emptied slot released them again.
        var removed: Value?
        swap(&removed, &values[index])
        closeGap(at: index)
        storedCount -= 1
        if count * 16 < keys.count && keys.count > minimumCapacity { resize(to: keys.count / 2) }
        return removed
    }

    @inlinable
    public mutating func removeAll() {
        self = Self(minimumCapacity: minimumCapacity)
    }

    /// The keys in ascending order (the order they were handed out).
    @inlinable
    public var sortedKeys: [Key] { keys.compactMap { $0 }.sorted() }

    /// True when some entry satisfies `predicate`.
    @inlinable
    public func contains(where predicate: (Key, Value) -> Bool) -> Bool {
        for index in keys.indices {
            if let key = keys[index], let value = values[index], predicate(key, value) { return true }
        }
        return false
    }

    /// Every entry, in slot order (not sorted).
    @inlinable
    public func forEach(_ body: (Key, Value) -> Void) {
        for index in keys.indices {
            if let key = keys[index], let value = values[index] { body(key, value) }
        }
    }

    @inlinable
    func find(_ key: Key) -> Int? {
        let mask = keys.count - 1
        var index = Self.home(key, mask)
        while let found = keys[index] {
            if found == key { return index }
            index = (index + 1) & mask
        }
        return nil
    }

    @inlinable
    mutating func insert(_ value: Value, for key: Key) {
        let mask = keys.count - 1
        var index = Self.home(key, mask)
        while let found = keys[index] {
            if found == key {
                values[index] = value
                return
            }
            index = (index + 1) & mask
        }
        keys[index] = key
        values[index] = value
        storedCount += 1
        if count * 2 > keys.count { resize(to: keys.count * 2) }
    }

    /// Empties `start` and moves later members of the probe run back into the gap, so every
    /// member stays reachable from its home slot without a run-ending hole before it.
    @inlinable
    mutating func closeGap(at start: Int) {
        let mask = keys.count - 1
        var gap = start
        var index = (start + 1) & mask
        while let key = keys[index] {
            let home = Self.home(key, mask)
            // The member may fill the gap unless its home lies cyclically in (gap, index].
            let homeAfterGap = (index - home) & mask < (index - gap) & mask
            if !homeAfterGap {
                keys[gap] = key
                values.swapAt(gap, index)
                gap = index
            }
            index = (index + 1) & mask
        }
        keys[gap] = nil
        values[gap] = nil
    }

    @inlinable
    mutating func resize(to capacity: Int) {
        let oldKeys = keys
        var oldValues = values
        keys = Array(repeating: nil, count: capacity)
        values = Array(repeating: nil, count: capacity)
        let mask = capacity - 1
        for old in oldKeys.indices {
            guard let key = oldKeys[old] else { continue }
            var index = Self.home(key, mask)
            while keys[index] != nil { index = (index + 1) & mask }
            keys[index] = key
            swap(&values[index], &oldValues[old])
        }
    }

    @inlinable
    static func home(_ key: Key, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: key.sequence) & mask
    }
}
