#if canImport(Glibc)
import Glibc
#endif

/// The loops' time for timers: nanoseconds of `CLOCK_MONOTONIC`, the clock `epoll_wait`
/// counts its timeout in, as a plain `Int64`.
///
/// Not `ContinuousClock.Instant`: the standard library is built resilient, so outside it an
/// instant is opaque, and every copy, comparison and conversion of one (an optional in the
/// heap's first entry, the 128-bit division into milliseconds) went through value witnesses or
/// a call: about 550 instructions per push under load, where an integer costs a handful.
enum LoopClock {
    /// Delays are capped here (about 31 years), so `now + delay` never overflows.
    static let maxDelay: Int64 = 1_000_000_000 * 1_000_000_000

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    /// `duration` in nanoseconds, rounded up so a timer never fires early; 0 for a negative
    /// duration, `maxDelay` for a longer one. `components` divides 128 bits: this runs once per
    /// `schedule` and once per turn that holds log lines, not per timer comparison.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        guard seconds < maxDelay / 1_000_000_000 else { return maxDelay }
        return seconds * 1_000_000_000 + (attoseconds + 999_999_999) / 1_000_000_000
    }

    /// An `epoll_wait` timeout: `nanoseconds` in milliseconds, rounded up so a timer due in
    /// 0.3 ms does not spin the loop with zero timeouts; 0 when already due.
    static func milliseconds(_ nanoseconds: Int64) -> Int32 {
        guard nanoseconds > 0 else { return 0 }
        return Int32(min((nanoseconds + 999_999) / 1_000_000, Int64(Int32.max)))
    }
}
