import Synchronization

/// The apns-id of every push the emulator accepted, filled on its loop, to find 201s that
/// never reached it, and how many reached it more than once.
package final class DeliveredIDs: Sendable {
    private let ids = Mutex<(set: Set<UInt128>, repeats: Int)>(([], 0))

    package init() {}

    /// False when `id` was recorded before.
    @discardableResult
    package func insert(_ id: UInt128) -> Bool {
        ids.withLock {
            let new = $0.set.insert(id).inserted
            if !new { $0.repeats += 1 }
            return new
        }
    }

    /// Records of an id already recorded: a push that reached the emulator twice.
    package var repeats: Int { ids.withLock { $0.repeats } }

    /// Distinct ids recorded so far.
    package var count: Int { ids.withLock { $0.set.count } }

    /// How many of `accepted` the emulator never accepted.
    package func missing(_ accepted: [UInt128]) -> Int {
        ids.withLock { state in accepted.reduce(0) { $0 + (state.set.contains($1) ? 0 : 1) } }
    }
}
