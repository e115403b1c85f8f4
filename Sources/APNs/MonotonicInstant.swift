#if canImport(Glibc)
import Glibc
#endif

/// A point in time on the pool's clock, the clock `ContinuousClock` reads (`CLOCK_BOOTTIME` on
/// Linux), held as the time since its origin so that the compiler knows its layout.
///
/// Why not `ContinuousClock.Instant`: the standard library keeps its layout private (resilient),
/// so every struct and enum that holds one — a push, a connection, an event, an action list — is
/// copied through runtime metadata, and every comparison and sum is a call. The pool keeps a
/// deadline or two per push in its tables and compares them on every event.
struct MonotonicInstant: Comparable, Hashable, Sendable {
    /// Since the clock's origin (boot, on Linux); only differences between instants mean anything.
    var sinceOrigin: Duration

    init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

    static var now: MonotonicInstant {
        #if canImport(Glibc)
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return MonotonicInstant(sinceOrigin: Duration(secondsComponent: Int64(time.tv_sec),
                                                      attosecondsComponent: Int64(time.tv_nsec) * 1_000_000_000))
        #else
        return MonotonicInstant(sinceOrigin: origin.duration(to: ContinuousClock.now))
        #endif
    }

    #if !canImport(Glibc)
    private static let origin = ContinuousClock.now
    #endif

    static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool { a.sinceOrigin < b.sinceOrigin }
    static func + (a: MonotonicInstant, b: Duration) -> MonotonicInstant { MonotonicInstant(sinceOrigin: a.sinceOrigin + b) }
    static func - (a: MonotonicInstant, b: Duration) -> MonotonicInstant { MonotonicInstant(sinceOrigin: a.sinceOrigin - b) }
    static func - (a: MonotonicInstant, b: MonotonicInstant) -> Duration { a.sinceOrigin - b.sinceOrigin }
}
