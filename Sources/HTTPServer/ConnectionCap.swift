// Who makes room when a connection arrives at the cap, as pure logic: the server reports each
// loop's longest-idle connections, this says what to do. No I/O, no clock reads.

import EventLoop

/// The two kinds of idle connection the cap tells apart.
enum IdleKind: Int, CaseIterable {
    /// Accepted, and not a byte has arrived yet: there is no request on it to lose.
    case fresh = 0
    /// Kept alive after at least one request: its client may send the next one at any moment.
    case kept = 1
}

/// What to do with a connection accepted while `maxConnections` are already open.
enum CapDecision: Equatable {
    /// There is room.
    case accept
    /// Close the longest-idle connection of this kind on the loop at this index, then serve
    /// the new one.
    case evict(loop: Int, kind: IdleKind)
    /// Nothing idle may give way yet: answer 408 to the new connection's loop's slowest request
    /// still arriving (`slowestToCut`), then serve the new one. When there is none, close the
    /// oldest connection that has sent nothing on the loop `thenFresh`, however young; reject the
    /// new one when that is nil too.
    case cutSlowest(thenFresh: Int?)
}

/// The connection cap and its rules. At the cap something gives way so a health probe or a
/// push is served while a flood holds every slot; the cap itself is never exceeded for long,
/// since something is closed for each connection let in:
///
/// 1. the connection that has sent nothing the longest, once it has been open `minimumFreshIdle`
///    (a flood's idle sockets; a real client's request follows its connect within milliseconds,
///    so the grace keeps one new client from cutting another whose request is on its way);
/// 2. else the kept connection idle the longest, if idle for at least `minimumKeptIdle`: a
///    client between two requests (Mastodon's workers send every few milliseconds) is never cut
///    as it sends, while connections held idle by a flood age past it within a second;
/// 3. else the slowest request still arriving (fewest bytes per second since its first byte: a
///    trickled body or head), answered 408, which Mastodon retries: a real sender writes its
///    whole request at once (nginx buffers the body before it forwards), so at the cap the
///    slowest arriving request is a flood's;
/// 4. else the connection that has sent nothing the longest, however young (a flood's sockets in
///    their first moments: the probe that arrives then is still served);
/// 5. else (every connection busy with a request being answered) the new connection is closed
///    at once, so a push flood can't push the server past the cap.
///
/// Times are `LoopClock` nanoseconds; the two minimums are converted to them once, here.
struct ConnectionCap {
    let maxConnections: Int
    let minimumKeptIdle: Int64
    let minimumFreshIdle: Int64

    init(maxConnections: Int, minimumKeptIdle: Duration = .seconds(1), minimumFreshIdle: Duration = .milliseconds(250)) {
        self.maxConnections = maxConnections
        self.minimumKeptIdle = LoopClock.nanoseconds(minimumKeptIdle)
        self.minimumFreshIdle = LoopClock.nanoseconds(minimumFreshIdle)
    }

    /// How long, in nanoseconds, a connection of `kind` must have been idle before it may give
    /// way (rules 1, 2).
    func minimumIdle(_ kind: IdleKind) -> Int64 {
        kind == .kept ? minimumKeptIdle : minimumFreshIdle
    }

    /// - Parameters:
    ///   - open: open connections, the new one included.
    ///   - oldestIdle: per loop, since when its longest-idle connection of each kind (indexed by
    ///     `IdleKind.rawValue`) has been idle; nil when the loop has none of that kind.
    ///   - local: the new connection's loop, preferred on a tie since it needs no hop.
    ///   - now: when the new connection arrived.
    func decide(open: Int, oldestIdle: [[Int64?]], local: Int, now: Int64) -> CapDecision {
        guard open > maxConnections else { return .accept }
        for kind in IdleKind.allCases {
            var best: (loop: Int, since: Int64)?
            for (index, heads) in oldestIdle.enumerated() {
                guard let since = heads[kind.rawValue], now - since >= minimumIdle(kind) else { continue }
                if let current = best, since > current.since || (since == current.since && index != local) { continue }
                best = (index, since)
            }
            if let best { return .evict(loop: best.loop, kind: kind) }
        }
        var fresh: (loop: Int, since: Int64)?
        for (index, heads) in oldestIdle.enumerated() {
            guard let since = heads[IdleKind.fresh.rawValue] else { continue }
            if let current = fresh, since > current.since || (since == current.since && index != local) { continue }
            fresh = (index, since)
        }
        return .cutSlowest(thenFresh: fresh?.loop)
    }

    /// Of the requests still arriving on a loop, the one to answer 408 at the cap: the slowest
    /// (fewest bytes per second since its first byte, counting at least a millisecond).
    func slowestToCut(_ arriving: [RequestBudget.Candidate], now: Int64) -> Int? {
        func rate(_ c: RequestBudget.Candidate) -> Double {
            Double(c.received) / max(RequestBudget.milliseconds(now - c.since), 1)
        }
        return arriving.indices.min { rate(arriving[$0]) < rate(arriving[$1]) }
    }
}
