#if canImport(Glibc)
import Glibc
#endif

/// The loops' time: nanoseconds of `CLOCK_MONOTONIC`, the clock `epoll_wait` counts its
/// timeout in, as a plain `Int64`. The timers keep their deadlines in it, and the HTTP server
/// its connections' times (timeouts, idle order for the connection cap, the request budget).
///
/// Not `ContinuousClock.Instant`: the standard library is built resilient, so outside it an
/// instant is opaque, and every copy, comparison and conversion of one (an optional in the
/// heap's first entry, the 128-bit division into milliseconds) goes through value witnesses or
/// a call, where an integer costs a handful of instructions. And `ContinuousClock.now` lives in
/// the `_Concurrency` module's one big code section: sweep timers reading it would keep two
/// 64 KiB windows of that code resident in an idle relay for nothing else.
package enum LoopClock {
    /// Delays are capped here (about 31 years), so `now + delay` never overflows.
    package static let maxDelay: Int64 = 1_000_000_000 * 1_000_000_000

    package static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    /// `duration` in nanoseconds, rounded up so a timer never fires early; 0 for a negative
    /// duration, `maxDelay` for a longer one. `components` divides 128 bits: this runs once per
    /// `schedule`, and for the HTTP server once per configured duration and per drain, not per
    /// comparison.
    package static func nanoseconds(_ duration: Duration) -> Int64 {
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
