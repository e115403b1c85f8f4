import Synchronization

/// The apns-id of every push the emulator accepted, filled on its loop, to find 201s that
/// never reached it, and which reached it more than once (and when each was first seen).
package final class DeliveredIDs: Sendable {
    private struct State {
        /// Each id's first record, in monotonic nanoseconds.
        var firstSeen: [UInt128: UInt64] = [:]
        /// Records of an id beyond its first, by id.
        var repeated: [UInt128: Int] = [:]
        var repeats = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// False when `id` was recorded before.
    @discardableResult
    package func insert(_ id: UInt128, at instant: UInt64 = monotonicNanos()) -> Bool {
        state.withLock {
            if $0.firstSeen[id] == nil {
                $0.firstSeen[id] = instant
                return true
            }
            $0.repeated[id, default: 0] += 1
            $0.repeats += 1
            return false
        }
    }

    /// Records of an id already recorded: a push that reached the emulator twice.
    package var repeats: Int { state.withLock { $0.repeats } }

    /// Each id recorded more than once, with its first record's instant and how many records
    /// followed it.
    package var repeated: [(id: UInt128, firstSeen: UInt64, extra: Int)] {
        state.withLock { state in state.repeated.map { ($0.key, state.firstSeen[$0.key] ?? 0, $0.value) } }
    }

    /// Distinct ids recorded so far.
    package var count: Int { state.withLock { $0.firstSeen.count } }

    /// How many of `accepted` the emulator never accepted.
    package func missing(_ accepted: [UInt128]) -> Int {
        state.withLock { state in accepted.reduce(0) { $0 + (state.firstSeen[$1] == nil ? 1 : 0) } }
    }
}
