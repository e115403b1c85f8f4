// The timeout decisions of one server connection, as pure logic: the connection records
// when things happened, the loop's sweep asks what to do now. No I/O, no clock reads.

import EventLoop

/// What a connection must do when its loop sweeps the timers.
enum TimeoutAction: Equatable {
    case none
    /// Nothing of a request is lost: close without a word (idle keep-alive, stuck reader).
    case close
    /// A request is half received: answer 408 with this reason, then close.
    case requestTimeout(String)
}

/// The phase a connection is in, as far as timeouts care.
enum ConnectionPhase: Equatable {
    /// Between requests, nothing buffered.
    case idle
    /// Some bytes of a request head arrived, the blank line not yet.
    case receivingHead
    /// The head is in, the body is arriving.
    case receivingBody
    /// The responder works on a request: its own deadline applies, not ours.
    case responding
}

/// Timestamps of one connection and the decision they lead to.
///
/// Kept apart from the socket so the rules can be tested with made-up instants instead of
/// sleeping: `action(phase:pendingWriteBytes:now:)` is the whole policy. Times are `LoopClock`
/// nanoseconds.
struct ConnectionTimeouts {
    /// The configured timeouts in `LoopClock` nanoseconds, converted once per server.
    struct Limits {
        let header: Int64
        let body: Int64
        let request: Int64
        let idle: Int64
        let write: Int64

        init(_ configuration: HTTPServerConfiguration) {
            header = LoopClock.nanoseconds(configuration.headerTimeout)
            body = LoopClock.nanoseconds(configuration.bodyTimeout)
            request = LoopClock.nanoseconds(configuration.requestTimeout)
            idle = LoopClock.nanoseconds(configuration.idleTimeout)
            write = LoopClock.nanoseconds(configuration.writeTimeout)
        }
    }

    let limits: Limits

    /// When the connection last became idle (opened, or finished a response).
    var idleSince: Int64
    /// When the first byte of the current request arrived: the head timeout and the
    /// whole-request deadline both count from here.
    var headStart: Int64
    /// When bytes last arrived: the body must keep moving.
    var lastRead: Int64
    /// Unsent bytes at the last check, and when that number last went down.
    var lastPendingWriteBytes = 0
    var writeProgress: Int64

    init(limits: Limits, now: Int64) {
        self.limits = limits
        idleSince = now
        headStart = now
        lastRead = now
        writeProgress = now
    }

    init(configuration: HTTPServerConfiguration, now: Int64) {
        self.init(limits: Limits(configuration), now: now)
    }

    /// Records unsent bytes after a write or at a sweep; any decrease is progress.
    mutating func noteWriteBuffer(_ pending: Int, now: Int64) {
        if pending == 0 || lastPendingWriteBytes == 0 || pending < lastPendingWriteBytes {
            writeProgress = now
        }
        lastPendingWriteBytes = pending
    }

    /// The decision at `now`. A peer that stopped reading is cut off whatever the phase,
    /// because its unsent bytes are memory the server holds for it.
    mutating func action(phase: ConnectionPhase, pendingWriteBytes: Int, now: Int64) -> TimeoutAction {
        noteWriteBuffer(pendingWriteBytes, now: now)
        if pendingWriteBytes > 0 && now - writeProgress >= limits.write {
            return .close
        }
        // A body that trickles a byte at a time never stalls, yet holds its buffer: the whole
        // request, head and body, gets one deadline whatever its pace.
        if phase == .receivingHead || phase == .receivingBody, now - headStart >= limits.request {
            return .requestTimeout("request not complete within \(Duration.nanoseconds(limits.request)); send the whole request at once")
        }
        switch phase {
        case .responding:
            return .none
        case .idle:
            return now - idleSince >= limits.idle ? .close : .none
        case .receivingHead:
            return now - headStart >= limits.header
                ? .requestTimeout("request head not complete within \(Duration.nanoseconds(limits.header)); send the whole head at once")
                : .none
        case .receivingBody:
            return now - lastRead >= limits.body
                ? .requestTimeout("request body stalled for \(Duration.nanoseconds(limits.body)); send the body without pauses")
                : .none
        }
    }
}
