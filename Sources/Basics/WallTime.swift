#if canImport(Glibc)
import Glibc
#endif

/// A reading of the wall clock (CLOCK_REALTIME), in nanoseconds since 1970-01-01T00:00:00Z:
/// what the relay needs of `Date` (log timestamps, `apns-expiration`, the JWT's `iat`, a 410's
/// `timestamp`) without linking Foundation. Durations and timeouts use `ContinuousClock`; this
/// is only for instants that leave the process.
package struct WallTime: Sendable, Hashable, Comparable {
    /// Nanoseconds since the Unix epoch; negative before it. Int64 reaches the year 2262.
    package var nanosecondsSince1970: Int64

    package init(nanosecondsSince1970: Int64) { self.nanosecondsSince1970 = nanosecondsSince1970 }

    /// From seconds as a `Double` (tests write instants this way), to the nearest microsecond:
    /// what a `Double` holds of a present-day instant is no finer than that.
    package init(timeIntervalSince1970 seconds: Double) {
        nanosecondsSince1970 = Int64((seconds * 1_000_000).rounded()) * 1000
    }

    /// The clock now.
    package static var now: WallTime {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return WallTime(nanosecondsSince1970: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    /// Seconds since 1970 as a `Double`, as `Date.timeIntervalSince1970` gave them.
    package var timeIntervalSince1970: Double { Double(nanosecondsSince1970) / 1_000_000_000 }

    /// Whole seconds since 1970, rounded down (the form of `iat`, `apns-expiration` and the clock's `tv_sec`).
    package var unixSeconds: Int64 { floorDivide(nanosecondsSince1970, 1_000_000_000) }

    /// Whole microseconds since 1970, to the nearest one.
    package var unixMicroseconds: Int64 { floorDivide(nanosecondsSince1970 + 500, 1000) }

    package static func < (lhs: WallTime, rhs: WallTime) -> Bool { lhs.nanosecondsSince1970 < rhs.nanosecondsSince1970 }

    /// Seconds since 1970 now: the `iat` of a provider token, the emulator's clock.
    package static var unixSecondsNow: Int64 { now.unixSeconds }
}

/// `a / b` rounded toward minus infinity (for instants before 1970), `b` positive.
private func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
    let quotient = a / b
    return a % b < 0 ? quotient - 1 : quotient
}
