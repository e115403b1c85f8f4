import Synchronization

/// The apns-id of every push the emulator accepted, filled on its loop, to find 201s that
/// never reached it.
package final class DeliveredIDs: Sendable {
    private let ids = Mutex<Set<UInt128>>([])

    package init() {}

    package func insert(_ id: UInt128) { _ = ids.withLock { $0.insert(id) } }

    /// How many of `accepted` the emulator never accepted.
    package func missing(_ accepted: [UInt128]) -> Int {
        ids.withLock { set in accepted.reduce(0) { $0 + (set.contains($1) ? 0 : 1) } }
    }
}
