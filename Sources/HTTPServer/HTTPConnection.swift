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
    private let stream: TCPStream
    private let core: HTTPServerCore
    private let context: LoopContext
    private var parser: HTTPParser
    private var timeouts: ConnectionTimeouts
    private let peer: String?
    /// The responder works on a request; later requests wait in the parser.
    private var responding = false
    /// A response is out with `Connection: close` (or an error): nothing more is read.
    private var closing = false
    /// Answers wait until the peer has taken the previous one (bounded output).
    private var waitingForDrain = false
    /// Reading stops while too much pipelined input waits, or for the server's request budget.
    private var pausedForPipelining = false
    private var pausedForBudget = false
    private var streamPaused = false
    private var isClosed = false
    /// What this connection's parser holds, as last added to the server's total.
    private var accountedBytes = 0
    /// Bytes read since the current request began: its sender's pace, for the budget.
    private var requestBytes = 0
    /// Some byte has arrived: the connection is no longer `.fresh` when idle.
    private var hasReceived = false
    /// Links of the loop's idle lists (`LoopContext.setIdle` keeps them). The list owns its
    /// members through `idleNext` and its head; `idlePrevious` is unowned(unsafe) because a
    /// listed connection's predecessor is listed too, so held by the list. A weak link would
    /// give every connection a side table and make each retain and release of it take the
    /// runtime's slow path: several per push.
    var listedIdle: IdleKind?
    var idleNext: HTTPConnection?
    unowned(unsafe) var idlePrevious: HTTPConnection?
    /// The peer shut down its sending side: answer what is complete, then close.
    private var peerFinished = false
    /// An event parsed ahead, after the peer's EOF, to learn whether an answer is the last.
    private var lookahead: HTTPParserEvent?
    /// Where the responder's answers come back (made once: see `AnswerSlot`).
    private let answerSlot: AnswerSlot
    /// Of the request being answered: whether the connection may stay open after it, and
    /// whether it is a HEAD (its answer goes out without a body).
    private var answerKeepsAlive = true
    private var answeringHead = false

    init(stream: TCPStream, core: HTTPServerCore, context: LoopContext) {
        self.stream = stream
        self.core = core
        self.context = context
        peer = stream.peerAddress?.description
        answerSlot = AnswerSlot(loop: stream.loop)
        parser = HTTPParser(limits: core.configuration.limits, peerAddress: peer)
        timeouts = ConnectionTimeouts(limits: core.timeoutLimits, now: LoopClock.now())
    }

    private var phase: ConnectionPhase {
        if responding || waitingForDrain { return .responding }
        if parser.isIdle { return .idle }
        return parser.isReceivingBody ? .receivingBody : .receivingHead
    }

    // MARK: TCPStreamHandler

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        if closing { return }
        let now = LoopClock.now()
        if !responding && parser.isIdle {
            timeouts.headStart = now
            requestBytes = 0
        }
        requestBytes += bytes.count
        hasReceived = true
        timeouts.lastRead = now
        parser.append(bytes)
        if responding || waitingForDrain {
            if parser.bufferedByteCount > core.maxBufferedInput {
                pausedForPipelining = true
                updateReading()
            }
        } else {
            processInput()
        }
        settle()
        checkBudget(now: now)
    }

    func streamDidDrainWrites(_ stream: TCPStream) {
        timeouts.noteWriteBuffer(0, now: LoopClock.now())
        guard waitingForDrain else { return }
        waitingForDrain = false
        resumeAfterResponse()
        settle()
    }

    /// Complete requests already received are still answered (every push ends with an
    /// answer); a partial one is dropped, since its sender gave up.
    func streamDidReadEOF(_ stream: TCPStream) {
        peerFinished = true
        if closing || responding || waitingForDrain { return }  // `finish` or the flush ends it
        processInput()
        settle()
    }

    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        guard !isClosed else { return }
        isClosed = true
        if pausedForBudget {
            pausedForBudget = false
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
        let held = isClosed ? 0 : parser.heldByteCount
        if held != accountedBytes {
            core.counters.bufferedBytes.wrappingAdd(held - accountedBytes, ordering: .relaxed)
            accountedBytes = held
        }
        let idle = !isClosed && !closing && phase == .idle
        context.setIdle(self, idle ? (hasReceived ? .kept : .fresh) : nil)
    }

    /// Over the budget: stop reading this connection if it holds a fair share or more, and
    /// let the loop cut the slowest senders.
    private func checkBudget(now: Int64) {
        let budget = context.budget
        let total = core.counters.bufferedBytes.load(ordering: .relaxed)
        guard total > budget.limit else { return }
        if !isClosed && !closing && !pausedForBudget && !parser.isIdle
            && budget.shouldPause(held: accountedBytes, total: total, open: core.counters.open.load(ordering: .relaxed)) {
            pausedForBudget = true
            context.budgetPausedCount += 1
            updateReading()
        }
        context.enforceBudget(now: now)
    }

    /// The half-received request as the budget sees it; nil unless one is arriving.
    var budgetCandidate: RequestBudget.Candidate? {
        guard !isClosed, !closing else { return nil }
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
        guard pausedForBudget, !isClosed else { return }
        pausedForBudget = false
        context.budgetPausedCount -= 1
        updateReading()
    }

    private func updateReading() {
        let pause = pausedForPipelining || pausedForBudget
        guard pause != streamPaused, !isClosed else { return }
        streamPaused = pause
        if pause { stream.pauseReading() } else { stream.resumeReading() }
    }

    // MARK: Requests

    /// Pulls events from the parser until a request goes to the responder or bytes run out.
    private func processInput() {
        while !responding && !closing && !isClosed {
            guard let event = nextEvent() else { break }
            switch event {
            case .expectContinue:
                if peerFinished { continue }  // the body can no longer come
                HTTPResponse.continueHead.withUnsafeBytes { stream.write($0) }
                noteWrite()
            case .error(let error):
                respondAndClose(HTTPResponse(parseError: error))
                return
            case .request(let request):
                dispatch(request)
            }
        }
        if pausedForPipelining && !closing && parser.bufferedByteCount <= core.maxBufferedInput {
            pausedForPipelining = false
            updateReading()
        }
        if !responding && !closing && (peerFinished || (context.isDraining && parser.isIdle)) {
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
        responding = true
        answerKeepsAlive = request.keepAlive
        // RFC 9110 §9.3.2: a HEAD answer has no content, or the peer reads it as the next answer.
        answeringHead = request.method == "HEAD"
        let slot = answerSlot
        slot.expect(self)
        core.responder.respond(to: request) { answer in slot.deliver(answer) }
    }

    /// The answer to the request `dispatch` handed on, back on this loop (`AnswerSlot`).
    func finish(_ answer: HTTPResponse) {
        responding = false
        guard !isClosed else { return }
        defer { settle() }
        var response = answer
        if answeringHead { response.body = [] }
        let close = !answerKeepsAlive || context.isDraining || (peerFinished && !hasMoreToAnswer())
        write(response, close: close)
        if close {
            closeWhenFlushed()
            return
        }
        if stream.pendingWriteBytes > 0 {
            waitingForDrain = true  // the peer reads slowly: answer the next one after this is out
            return
        }
        resumeAfterResponse()
    }

    private func resumeAfterResponse() {
        let now = LoopClock.now()
        timeouts.idleSince = now
        if !parser.isIdle { timeouts.headStart = now }
        processInput()
    }

    private func write(_ response: HTTPResponse, close: Bool) {
        context.output.removeAll(keepingCapacity: true)
        serialize(response, date: context.date, close: close, into: &context.output)
        context.output.withUnsafeBytes { stream.write($0) }
        noteWrite()
    }

    private func noteWrite() {
        let pending = stream.pendingWriteBytes
        if pending > 0 { timeouts.noteWriteBuffer(pending, now: LoopClock.now()) }
    }

    /// Error answers end the connection: after a parse error the framing is lost.
    private func respondAndClose(_ response: HTTPResponse) {
        guard !closing, !isClosed else { return }
        write(response, close: true)
        closeWhenFlushed()
    }

    /// Nothing more is parsed once closing, so the parser's memory goes back at once (a
    /// connection cut for the budget must not hold its buffers until its answer is out).
    private func closeWhenFlushed() {
        closing = true
        parser = HTTPParser(limits: core.configuration.limits, peerAddress: peer)
        lookahead = nil
        settle()
        stream.closeAfterFlush()
    }

    // MARK: Timeouts, drain, stop

    func checkTimeouts(now: Int64) {
        guard !isClosed else { return }
        let phase = closing ? ConnectionPhase.responding : self.phase
        switch timeouts.action(phase: phase, pendingWriteBytes: stream.pendingWriteBytes, now: now) {
        case .none:
            break
        case .close:
            stream.close()
        case .requestTimeout(let reason):
            respondAndClose(HTTPResponse(status: 408, reason: reason))
        }
    }

    /// Idle connections close now; one with a request in flight or arriving finishes it
    /// (answered with `Connection: close`; the header and body timeouts still bound it).
    func beginDrain() {
        guard !isClosed, !closing else { return }
        if !responding && parser.isIdle { closeWhenFlushed() }
    }

    func closeNow() {
        guard !isClosed else { return }
        stream.close()
    }
}
