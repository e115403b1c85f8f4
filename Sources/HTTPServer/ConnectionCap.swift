// Who makes room when a connection arrives at the cap, as pure logic: the server reports each
// loop's longest-idle connection, this says what to do. No I/O, no clock reads.

/// What to do with a connection accepted while `maxConnections` are already open.
enum CapDecision: Equatable {
    /// There is room.
    case accept
    /// Close the longest-idle connection of the loop at this index, then serve the new one.
    case evict(loop: Int)
    /// Every open connection is busy (mid-request or answering): close the new one, so a
    /// flood can't push the server past the cap.
    case reject
}

/// The connection cap and its one rule: at the cap, the connection idle the longest (a kept
/// connection with no request in progress) gives way, so a health probe or a push is served
/// while idle keep-alive connections hold every slot. A connection idle for less than
/// `minimumIdle` never gives way: its client may be sending its next request right now, and a
/// close would meet that request (a flood of new connections would otherwise cut every busy
/// keep-alive client in the few milliseconds between two of its requests).
struct ConnectionCap {
    let maxConnections: Int
    let minimumIdle: Duration

    init(maxConnections: Int, minimumIdle: Duration = .seconds(1)) {
        self.maxConnections = maxConnections
        self.minimumIdle = minimumIdle
    }

    /// - Parameters:
    ///   - open: open connections, the new one included.
    ///   - oldestIdle: per loop, since when its longest-idle connection has been idle (nil
    ///     when the loop has none).
    ///   - local: the new connection's loop, preferred on a tie since it needs no hop.
    ///   - now: when the new connection arrived.
    func decide(open: Int, oldestIdle: [ContinuousClock.Instant?], local: Int, now: ContinuousClock.Instant) -> CapDecision {
        guard open > maxConnections else { return .accept }
        var best: Int?
        for (index, since) in oldestIdle.enumerated() {
            guard let since, now - since >= minimumIdle else { continue }
            if let b = best, let current = oldestIdle[b] {
                if since < current || (since == current && index == local) { best = index }
            } else {
                best = index
            }
        }
        return best.map { .evict(loop: $0) } ?? .reject
    }
}
