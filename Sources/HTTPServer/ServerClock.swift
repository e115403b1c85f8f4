import EventLoop

/// The time the server judges its connections by (deadlines, idleness, a sender's pace), in
/// `LoopClock` nanoseconds: the loops' clock, or in a test one it moves by hand, so a timeout
/// test needs no sleep and no bound on how long the machine took. The loops still sweep on
/// their own timers; only what the sweep reads as "now" comes from here.
package struct ServerClock: Sendable {
    private let read: @Sendable () -> Int64

    /// `read` must never go backwards, and (as `LoopClock` readings are) never return 0.
    package init(_ read: @escaping @Sendable () -> Int64) {
        self.read = read
    }

    /// The loops' own clock, `CLOCK_MONOTONIC`.
    package static let loop = ServerClock { LoopClock.now() }

    func now() -> Int64 { read() }
}
