// The timeout decisions of one server connection, as pure logic: the connection records
// when things happened, the loop's sweep asks what to do now. No I/O, no clock reads.

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
/// sleeping: `action(phase:pendingWriteBytes:now:)` is the whole policy.
struct ConnectionTimeouts {
    let headerTimeout: Duration
    let bodyTimeout: Duration
    let requestTimeout: Duration
    let idleTimeout: Duration
    let writeTimeout: Duration

    /// When the connection last became idle (opened, or finished a response).
    var idleSince: ContinuousClock.Instant
    /// When the first byte of the current request arrived: the head timeout and the
    /// whole-request deadline both count from here.
    var headStart: ContinuousClock.Instant
    /// When bytes last arrived: the body must keep moving.
    var lastRead: ContinuousClock.Instant
    /// Unsent bytes at the last check, and when that number last went down.
    var lastPendingWriteBytes = 0
    var writeProgress: ContinuousClock.Instant

    init(configuration: HTTPServerConfiguration, now: ContinuousClock.Instant) {
        headerTimeout = configuration.headerTimeout
        bodyTimeout = configuration.bodyTimeout
        requestTimeout = configuration.requestTimeout
        idleTimeout = configuration.idleTimeout
        writeTimeout = configuration.writeTimeout
        idleSince = now
        headStart = now
        lastRead = now
        writeProgress = now
    }

    /// Records unsent bytes after a write or at a sweep; any decrease is progress.
    mutating func noteWriteBuffer(_ pending: Int, now: ContinuousClock.Instant) {
        if pending == 0 || lastPendingWriteBytes == 0 || pending < lastPendingWriteBytes {
            writeProgress = now
        }
        lastPendingWriteBytes = pending
    }

    /// The decision at `now`. A peer that stopped reading is cut off whatever the phase,
    /// because its unsent bytes are memory the server holds for it.
    mutating func action(phase: ConnectionPhase, pendingWriteBytes: Int, now: ContinuousClock.Instant) -> TimeoutAction {
        noteWriteBuffer(pendingWriteBytes, now: now)
        if pendingWriteBytes > 0 && now - writeProgress >= writeTimeout {
            return .close
        }
        // A body that trickles a byte at a time never stalls, yet holds its buffer: the whole
        // request, head and body, gets one deadline whatever its pace.
        if phase == .receivingHead || phase == .receivingBody, now - headStart >= requestTimeout {
            return .requestTimeout("request not complete within \(requestTimeout); send the whole request at once")
        }
        switch phase {
        case .responding:
            return .none
        case .idle:
            return now - idleSince >= idleTimeout ? .close : .none
        case .receivingHead:
            return now - headStart >= headerTimeout
                ? .requestTimeout("request head not complete within \(headerTimeout); send the whole head at once")
                : .none
        case .receivingBody:
            return now - lastRead >= bodyTimeout
                ? .requestTimeout("request body stalled for \(bodyTimeout); send the body without pauses")
                : .none
        }
    }
}
