import Synchronization

/// A fixed set of loops, one per core by default, so connections spread over all cores
/// while each connection stays on one thread and needs no locks.
package final class EventLoopGroup: Sendable {
    package let loops: [EventLoop]
    private let counter = Atomic<UInt>(0)

    /// Starts `loopCount` loops; if one fails to start, those already started are shut down.
    /// `probe` (tests only) hears every loop's wake-ups and timers.
    package init(loopCount: Int = System.coreCount, probe: (any EventLoopProbe)? = nil) throws {
        precondition(loopCount > 0, "an EventLoopGroup needs at least one loop")
        var started: [EventLoop] = []
        do {
            for i in 0..<loopCount {
                started.append(try EventLoop(name: "eventloop-\(i)", probe: probe))
            }
        } catch {
            for loop in started { loop.shutdown() }
            throw error
        }
        loops = started
    }

    /// Round robin, so new connections land evenly on the loops.
    package func next() -> EventLoop {
        let n = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(n % UInt(loops.count))]
    }

    /// Shuts every loop down and joins their threads.
    package func shutdown() {
        for loop in loops { loop.shutdown() }
    }
}
