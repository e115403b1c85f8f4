import Dispatch

/// The provider tokens each key has had accepted, across connections.
struct TokenLedger: Sendable {
    struct Key: Sendable {
        /// Tokens accepted and not yet expired (JWT → `iat`): they stay valid on any connection.
        var live: [String: Int64] = [:]
        /// When the last new token was accepted (Unix seconds).
        var lastNewAt: Int64?
        var accepted = 0
    }
    var keys: [String: Key] = [:]
    var refused = 0

    /// True when `jwt` may be used now: known already, or new and `interval` seconds after the
    /// key's previous new token (then it is recorded as the key's newest).
    mutating func accept(_ jwt: String, keyID: String, issuedAt: Int64, now: Int64, maxAge: Int64, interval: Int64) -> Bool {
        var key = keys[keyID, default: Key()]
        defer { keys[keyID] = key }
        if key.live[jwt] != nil { return true }
        if let last = key.lastNewAt, now - last < interval {
            refused += 1
            return false
        }
        // Expired tokens are forgotten, so the ledger stays as small as the tokens in use.
        key.live = key.live.filter { now - $0.value <= maxAge }
        key.live[jwt] = issuedAt
        key.lastNewAt = now
        key.accepted += 1
        return true
    }
}

/// The last `capacity` records; a ring so that appending stays O(1) under load.
struct RecordRing: Sendable {
    let capacity: Int
    private var storage: [MockRecord] = []
    private var start = 0
    /// Threads waiting for the ring to hold `count` records, each woken by its semaphore.
    private var waiters: [(count: Int, semaphore: DispatchSemaphore)] = []

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { storage.count }

    mutating func append(_ record: MockRecord) {
        if storage.count < capacity {
            storage.append(record)
        } else {
            storage[start] = record
            start = (start + 1) % capacity
        }
        if !waiters.isEmpty {
            let held = storage.count
            waiters.removeAll { waiter in
                guard waiter.count <= held else { return false }
                waiter.semaphore.signal()
                return true
            }
        }
    }

    /// Registers `semaphore` to be signalled once `count` records are held; false (and nothing
    /// registered) when they already are.
    mutating func wait(for count: Int, semaphore: DispatchSemaphore) -> Bool {
        guard storage.count < count else { return false }
        waiters.append((count, semaphore))
        return true
    }

    mutating func stopWaiting(_ semaphore: DispatchSemaphore) {
        waiters.removeAll { $0.semaphore === semaphore }
    }

    var all: [MockRecord] {
        Array(storage[start...] + storage[..<start])
    }

    mutating func removeAll() {
        storage.removeAll()
        start = 0
    }
}
