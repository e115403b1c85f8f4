/// A map for the handful of entries one pool shard holds (its connections): the keys in an
/// array searched front to back, in the order they were added. With a few entries a search is
/// cheaper than hashing the key, which a `Dictionary` does on every lookup; it is no map for
/// many entries (a lookup walks them all).
struct SmallMap<Key: Equatable, Value> {
    /// In the order they were added.
    private(set) var keys: [Key] = []
    /// In the order of `keys`. Change an element in place through it (`values[index].x = y`,
    /// `index` from `index(forKey:)`): a read through the keyed subscript copies the value.
    /// Adding and removing go through the map only, which keeps both arrays in step.
    var values: [Value] = []

    init() {}

    var count: Int { keys.count }
    var isEmpty: Bool { keys.isEmpty }

    func index(forKey key: Key) -> Int? { keys.firstIndex(of: key) }

    subscript(key: Key) -> Value? {
        get {
            guard let index = index(forKey: key) else { return nil }
            return values[index]
        }
        set {
            if let index = index(forKey: key) {
                if let newValue { values[index] = newValue } else { remove(at: index) }
            } else if let newValue {
                keys.append(key)
                values.append(newValue)
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let index = index(forKey: key) else { return nil }
        return remove(at: index)
    }

    /// The keys whose values satisfy `isIncluded`, in the order they were added.
    func keys(where isIncluded: (Value) -> Bool) -> [Key] {
        keys.indices.filter { isIncluded(values[$0]) }.map { keys[$0] }
    }

    @discardableResult
    private mutating func remove(at index: Int) -> Value {
        keys.remove(at: index)
        return values.remove(at: index)
    }
}
