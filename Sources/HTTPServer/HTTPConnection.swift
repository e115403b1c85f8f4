#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoop
import Synchronization

/// One accepted connection: reads into the parser, answers one request at a time (so
/// pipelined answers keep their order), and closes when the protocol or a timeout says so.
///
/// Not `Sendable`: every member is touched only on its loop's thread; the responder's answer
/// comes back to it through its `AnswerSlot`, which holds it in a `LoopBound`.
final class HTTPConnection: TCPStreamHandler {
    /// The stream, and under HTTPS the TLS layer every write and close goes through.
    private let wire: ConnectionWire
    private let core: HTTPServerCore
    private let context: LoopContext
    private var parser: HTTPParser
    private var timeouts: ConnectionTimeouts
    private let peer: String?
    /// Where the connection is in its life; the cases are its legal states.
    private var state = State.reading
    /// What the peer has sent so far.
    private var input = Input.nothing
    /// Why reading is stopped (empty: the stream reads).
    private var readPauses: ReadPauses = []
    /// What this connection's parser holds, as last added to the server's total.
    private var accountedBytes = 0
    /// Bytes read since the current request began: its sender's pace, for the budget.
    private var requestBytes = 0
    /// Links of the loop's idle lists (`LoopContext.setIdle` keeps them). The list owns its
    /// members through `idleNext` and its head; `idlePrevious` is unowned(unsafe) because a
    /// listed connection's predecessor is listed too, so held by the list. A weak link would
    /// give every connection a side table and make each retain and release of it take the
    /// runtime's slow path: several per push.
    var listedIdle: IdleKind?
    var idleNext: HTTPConnection?
    unowned(unsafe) var idlePrevious: HTTPConnection?
    /// An event parsed ahead, after the peer's EOF, to learn whether an answer is the last.
    private var lookahead: HTTPParserEvent?
    /// Where the responder's answers come back (made once: see `AnswerSlot`).
    private let answerSlot: AnswerSlot
    /// HTTPS: handshake bytes arrived and the handshake is not complete. Until it is, the
    /// connection counts as a request head arriving (see `handshakeBytesArrived`).
    private var handshaking = false

    /// The legal states of one connection.
    enum State: Equatable {
        /// No request is with the responder: the parser takes bytes and hands on the next
        /// complete request (it may be between requests or half-way through one).
        case reading
        /// The responder works on a request; later requests wait in the parser.
        case answering(AnsweredRequest)
        /// The answer is written but the peer has not taken it all: the next request waits
        /// until it has (bounded output).
        case waitingForDrain
        /// An answer with `Connection: close` (or an error) is out: nothing more is read, and
        /// the stream closes once its bytes are flushed.
        case closing
        /// The stream is closed; late answers are dropped.
        case closed
    }

    /// What the answer needs to know of the request being answered.
    struct AnsweredRequest: Equatable {
        /// The connection may stay open after the answer.
        var keepAlive: Bool
        /// A HEAD: its answer goes out without a body.
        var isHead: Bool
    }

    /// What the peer has sent so far.
    enum Input {
        /// Not one byte: an idle connection is `.fresh`.
        case nothing
        /// Some bytes: an idle connection is `.kept`.
        case bytes
        /// It shut down its sending side: answer what is complete, then close.
        case ended
    }

    /// Reasons to stop reading: too much pipelined input waits, or the server's request budget.
    struct ReadPauses: OptionSet {
        let rawValue: UInt8
        static let pipelining = ReadPauses(rawValue: 1)
        static let budget = ReadPauses(rawValue: 2)
    }

    /// Still taking part: neither closing nor closed.
    private var isOpen: Bool {
        switch state {
        case .reading, .answering, .waitingForDrain: return true
        case .closing, .closed: return false
        }
    }

    /// A request is with the responder.
    private var isAnswering: Bool {
        if case .answering = state { return true }
        return false
    }

    /// A request is with the responder, or its answer is still going out.
    private var isResponding: Bool {
        switch state {
        case .answering, .waitingForDrain: return true
        case .reading, .closing, .closed: return false
        }
    }

    /// `acceptedAt` is the server's time when the connection was accepted, read before it was counted.
    init(stream: TCPStream, tls: TLSLayer?, core: HTTPServerCore, context: LoopContext, acceptedAt: Int64) {
        wire = ConnectionWire(stream: stream, tls: tls)
        self.core = core
        self.context = context
        peer = stream.peerAddress?.description
        answerSlot = AnswerSlot(loop: stream.loop)
        parser = HTTPParser(limits: core.configuration.limits, peerAddress: peer)
        timeouts = ConnectionTimeouts(limits: core.timeoutLimits, now: acceptedAt)
    }

    private var phase: ConnectionPhase {
        if isResponding { return .responding }
        if handshaking { return .receivingHead }
        if parser.isIdle { return .idle }
        return parser.isReceivingBody ? .receivingBody : .receivingHead
    }

    // MARK: TCPStreamHandler

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        guard isOpen else { return }
        let now = core.clock.now()
        if !isAnswering && parser.isIdle {
            timeouts.headStart = now
            requestBytes = 0
        }
        requestBytes += bytes.count
        if case .nothing = input { input = .bytes }
        timeouts.lastRead = now
        parser.append(bytes)
        if isResponding {
            if parser.bufferedByteCount > core.maxBufferedInput {
                readPauses.insert(.pipelining)
                updateReading()
            }
        } else {
            processInput()
        }
        settle()
        checkBudget(now: now)
    }

    func streamDidDrainWrites(_ stream: TCPStream) {
        let now = core.clock.now()
        timeouts.noteWriteBuffer(0, now: now)
        guard state == .waitingForDrain else { return }
        state = .reading
        resumeAfterResponse(now: now)
        settle()
    }

    /// Complete requests already received are still answered (every push ends with an
    /// answer); a partial one is dropped, since its sender gave up.
    func streamDidReadEOF(_ stream: TCPStream) {
        input = .ended
        guard state == .reading else { return }  // `finish` or the flush ends it
        processInput()
        settle()
    }

    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        guard state != .closed else { return }
        state = .closed
        if readPauses.contains(.budget) {
            readPauses.remove(.budget)
            context.budgetPausedCount -= 1
        }
        context.remove(self)
        settle()
        core.connectionClosed()
    }

    // MARK: Memory, idleness and the request budget

    /// Since when the connection has had nothing in progress (meaningful while idle).
    var idleSince: Int64 { timeouts.idleSince }

    /// Brings the server's view up to date after any change: the bytes the parser holds in
    /// the shared total, and whether the connection is on its loop's idle list.
    func settle() {
        let held = state == .closed ? 0 : parser.heldByteCount
        if held != accountedBytes {
            core.counters.bufferedBytes.wrappingAdd(held - accountedBytes, ordering: .relaxed)
            accountedBytes = held
        }
        let idle = state == .reading && parser.isIdle && !handshaking
        context.setIdle(self, idle ? (input == .nothing ? .fresh : .kept) : nil)
    }

    /// Over the budget: stop reading this connection if it holds a fair share or more, and
    /// let the loop cut the slowest senders.
    private func checkBudget(now: Int64) {
        let budget = context.budget
        let total = core.counters.bufferedBytes.load(ordering: .relaxed)
        guard total > budget.limit else { return }
        if isOpen && !readPauses.contains(.budget) && !parser.isIdle
            && budget.shouldPause(held: accountedBytes, total: total, open: core.counters.open.load(ordering: .relaxed)) {
            readPauses.insert(.budget)
            context.budgetPausedCount += 1
            updateReading()
        }
        context.enforceBudget(now: now)
    }

    /// The half-received request as the budget sees it; nil unless one is arriving.
    var budgetCandidate: RequestBudget.Candidate? {
        guard isOpen else { return nil }
        let phase = self.phase
        guard phase == .receivingHead || phase == .receivingBody else { return nil }
        return RequestBudget.Candidate(held: accountedBytes, received: requestBytes, since: timeouts.headStart)
    }

    /// Answers 408 (Mastodon retries it) and closes, freeing what the request held.
    func cutForBudget() {
        respondAndClose(HTTPResponse(
            status: 408, reason: "too many unfinished requests are held; send the whole request at once and retry"))
    }

    /// Answers 408 (Mastodon retries it) and closes, to make room at the connection cap.
    func cutForCap() {
        respondAndClose(HTTPResponse(
            status: 408, reason: "the server is at its connection cap and this request was the slowest to arrive; send the whole request at once and retry"))
    }

    func resumeAfterBudgetPause() {
        guard readPauses.contains(.budget), state != .closed else { return }
        readPauses.remove(.budget)
        context.budgetPausedCount -= 1
        updateReading()
    }

    /// Tells the stream to pause or resume as `readPauses` says (it ignores a repeat).
    private func updateReading() {
        guard state != .closed else { return }
        if readPauses.isEmpty { wire.resumeReading() } else { wire.pauseReading() }
    }

    // MARK: Requests

    /// Pulls events from the parser until a request goes to the responder or bytes run out.
    private func processInput() {
        while state == .reading {
            guard let event = nextEvent() else { break }
            switch event {
            case .expectContinue:
                if input == .ended { continue }  // the body can no longer come
                HTTPResponse.continueHead.withUnsafeBytes { wire.write($0) }
                noteWrite()
            case .error(let error):
                respondAndClose(HTTPResponse(parseError: error))
                return
            case .request(let request):
                dispatch(request)
            }
        }
        if readPauses.contains(.pipelining) && state != .closing && parser.bufferedByteCount <= core.maxBufferedInput {
            readPauses.remove(.pipelining)
            updateReading()
        }
        if state == .reading && (input == .ended || (context.isDraining && parser.isIdle)) {
            closeWhenFlushed()
        }
    }

    private func nextEvent() -> HTTPParserEvent? {
        if let event = lookahead {
            lookahead = nil
            return event
        }
        return parser.next()
    }

    /// After the peer's EOF: whether another complete request (or an error to answer)
    /// waits, so the answer before it keeps the connection and the last one says close.
    private func hasMoreToAnswer() -> Bool {
        while lookahead == nil, let event = parser.next() {
            if case .expectContinue = event { continue }
            lookahead = event
        }
        return lookahead != nil
    }

    private func dispatch(_ request: HTTPRequest) {
        // RFC 9110 §9.3.2: a HEAD answer has no content, or the peer reads it as the next answer.
        state = .answering(AnsweredRequest(keepAlive: request.keepAlive, isHead: request.method == "HEAD"))
        let slot = answerSlot
        slot.expect(self)
        core.responder.respond(to: request) { answer in slot.deliver(answer) }
    }

    /// The answer to the request `dispatch` handed on, back on this loop (`AnswerSlot`).
    func finish(_ answer: HTTPResponse) {
        // Closed (or closing, which no answer can start): the answer has nowhere to go.
        guard case .answering(let request) = state else { return }
        state = .reading
        defer { settle() }
        var response = answer
        if request.isHead { response.body = [] }
        let close = !request.keepAlive || context.isDraining || (input == .ended && !hasMoreToAnswer())
        // Read before the answer goes out: a peer that has read it finds the connection idle since then.
        let answeredAt = core.clock.now()
        write(response, close: close)
        if close {
            closeWhenFlushed()
            return
        }
        if wire.pendingWriteBytes > 0 {
            state = .waitingForDrain  // the peer reads slowly: answer the next one after this is out
            return
        }
        resumeAfterResponse(now: answeredAt)
    }

    private func resumeAfterResponse(now: Int64) {
        timeouts.idleSince = now
        if !parser.isIdle { timeouts.headStart = now }
        processInput()
    }

    private func write(_ response: HTTPResponse, close: Bool) {
        context.output.removeAll(keepingCapacity: true)
        serialize(response, date: context.date, close: close, into: &context.output)
        context.output.withUnsafeBytes { wire.write($0) }
        noteWrite()
    }

    private func noteWrite() {
        let pending = wire.pendingWriteBytes
        if pending > 0 { timeouts.noteWriteBuffer(pending, now: core.clock.now()) }
    }

    /// Error answers end the connection: after a parse error the framing is lost.
    private func respondAndClose(_ response: HTTPResponse) {
        guard isOpen else { return }
        write(response, close: true)
        closeWhenFlushed()
    }

    /// Nothing more is parsed once closing, so the parser's memory goes back at once (a
    /// connection cut for the budget must not hold its buffers until its answer is out).
    private func closeWhenFlushed() {
        if state != .closed { state = .closing }
        parser = HTTPParser(limits: core.configuration.limits, peerAddress: peer)
        lookahead = nil
        settle()
        wire.closeAfterFlush()
    }

    // MARK: Timeouts, drain, stop

    func checkTimeouts(now: Int64) {
        guard state != .closed else { return }
        let phase = state == .closing ? ConnectionPhase.responding : self.phase
        switch timeouts.action(phase: phase, pendingWriteBytes: wire.pendingWriteBytes, now: now) {
        case .none:
            break
        case .close:
            wire.close()
        case .requestTimeout(let reason):
            respondAndClose(HTTPResponse(status: 408, reason: reason))
        }
    }

    /// Idle connections close now; one with a request in flight or arriving finishes it
    /// (answered with `Connection: close`; the header and body timeouts still bound it).
    func beginDrain() {
        guard isOpen else { return }
        if !isAnswering && parser.isIdle { closeWhenFlushed() }
    }

    func closeNow() {
        guard state != .closed else { return }
        wire.close()
    }

    // MARK: HTTPS (the TLSLayer's calls while its handshake runs)

    /// Handshake bytes arrived. A handshake is held to a request head's limits: the header and
    /// request deadlines run from its first byte, its pace is a request's pace at the cap (a
    /// stalled one is cut as the slowest arriving), and meanwhile it is not idle.
    func handshakeBytesArrived(_ count: Int) {
        guard isOpen else { return }
        let now = core.clock.now()
        if !handshaking {
            handshaking = true
            timeouts.headStart = now
            requestBytes = 0
        }
        requestBytes += count
        timeouts.lastRead = now
        settle()
    }

    /// The handshake completed: the connection is idle again, as a plain one just accepted (it
    /// joins the idle list's tail, so its idle time counts from now).
    func handshakeFinished() {
        handshaking = false
        timeouts.idleSince = core.clock.now()
        settle()
    }
}
