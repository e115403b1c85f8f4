internal import CNghttp2

/// What the owner of a client session hears. Called on the owner's loop, never from inside
/// nghttp2, so an implementation may call back into the session (submit, cancel, terminate).
package protocol HTTP2ClientDelegate: AnyObject {
    /// Called exactly once per stream that `submitRequest` returned, teardown included,
    /// so the owner can end every push exactly once; `tag` is what the owner submitted it with.
    func session(_ session: HTTP2ClientSession, stream id: Int32, tag: UInt64, didComplete result: Result<HTTP2Response, HTTP2StreamError>)
    /// Called for every SETTINGS frame the server sends, with the live limit: Apple starts at 1,
    /// raises it after the first authenticated request, and lowers it again after a rejection.
    func session(_ session: HTTP2ClientSession, didUpdateMaxConcurrentStreams value: UInt32)
    /// Called before the completions of the streams the GOAWAY refuses, so the owner can stop
    /// routing new work here first; `refused` holds their tags, in stream order.
    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8],
                 refused: [UInt64])
    /// A PING we sent came back: the connection is alive.
    func sessionDidReceivePingAck(_ session: HTTP2ClientSession)
}

/// The client side of one HTTP/2 connection, as a pure protocol engine: bytes in through
/// `receive`, bytes out through `takeOutput`, no sockets and no threads.
///
/// The client's three layers: `NGHTTP2ClientSession` owns the C session and records what its
/// callbacks report; this type turns those records into the delegate's calls; Transport's
/// `HTTP2ClientConnection` carries its bytes over TLS and a socket.
///
/// Confined to the one event loop that owns the connection; not thread-safe.
///
/// The owner must never have more streams open than `remoteMaxConcurrentStreams`: nghttp2 would
/// queue the excess in an unbounded list, where pushes wait without a deadline. Keep the backlog
/// in the owner's bounded queue instead. Call `terminate()` before dropping a session that still
/// has streams: `deinit` frees nghttp2 but cannot report completions.
package final class HTTP2ClientSession {
    /// Held weakly: the owner of the session is usually its delegate.
    package private(set) weak var delegate: HTTP2ClientDelegate?
    /// The C session's owner (read by the test seam that moves stream ids).
    private(set) var core: NGHTTP2ClientSession
    private var delivering = false
    /// The storage of the last delivered batch of events, kept for the next one.
    private var spareEvents: [ClientEvent] = []

    /// Submits our SETTINGS (ENABLE_PUSH 0, the stream window) at once; they go out with the
    /// first `takeOutput`, after the connection preface.
    ///
    /// - Parameters:
    ///   - initialWindowSize: stream and connection receive window; larger than HTTP/2's 64 KiB
    ///     default so many concurrent responses never stall on WINDOW_UPDATE round trips.
    ///   - maxResponseBodySize: a response body above this resets its stream
    ///     (`.responseTooLarge`), so a misbehaving server cannot grow our memory without bound.
    package init(delegate: HTTP2ClientDelegate, initialWindowSize: Int = 1 << 20,
                maxResponseBodySize: Int = 1 << 20) throws {
        guard initialWindowSize >= 65_535 && initialWindowSize <= Int(Int32.max) else {
            throw HTTP2Error(code: .internalError, message: "initialWindowSize must be between 65535 and 2^31-1, got \(initialWindowSize)")
        }
        self.delegate = delegate
        self.core = try NGHTTP2ClientSession(initialWindowSize: Int32(initialWindowSize), maxResponseBodySize: maxResponseBodySize)
    }

    /// Feeds bytes read from the connection. Delegate calls for everything they completed
    /// happen before this returns.
    ///
    /// - Throws: `HTTP2Error.protocolError` when the peer broke HTTP/2 (our GOAWAY is then in
    ///   the output: flush it, then `terminate()`); `.sessionClosed` after `terminate()`.
    package func receive(_ bytes: UnsafeRawBufferPointer) throws {
        defer { deliver() }
        try core.receive(bytes)
    }

    /// Appends everything nghttp2 has to send to `buffer`, so the owner makes one TLS write per batch.
    package func takeOutput(into buffer: inout [UInt8]) {
        core.takeOutput(into: &buffer)
        deliver()
    }

    /// True when `takeOutput` would produce bytes.
    package var wantsWrite: Bool { core.wantsWrite }
    /// False once the connection has nothing left to read (both sides done, or a fatal error).
    package var wantsRead: Bool { core.wantsRead }

    /// The server's live SETTINGS_MAX_CONCURRENT_STREAMS. Until its first SETTINGS arrive this is
    /// 1, the conservative value Apple itself starts with.
    package var remoteMaxConcurrentStreams: UInt32 { core.remoteMaxConcurrentStreams }
    /// Streams submitted and not yet completed (including any nghttp2 has not sent yet).
    package var openStreamCount: Int { core.streams.count }
    /// Each stream submitted and not yet completed, with its tag, in no particular order.
    package func forEachOpenStream(_ body: (_ id: Int32, _ tag: UInt64) -> Void) {
        core.streams.forEach { id, stream in body(id, stream.tag) }
    }
    /// True once the server's first SETTINGS frame arrived: before that the limit is a guess.
    package var hasReceivedSettings: Bool { core.hasReceivedSettings }
    /// True once the server sent GOAWAY: open no more streams here.
    package var goAwayReceived: Bool { core.goAwayReceived }

    /// Queues one request; its bytes go out with the next `takeOutput`.
    ///
    /// The body is copied into a data provider. Header names are lower-cased; `:path` is never
    /// indexed by HPACK. Returns the stream id that the completion will carry, with `tag`.
    ///
    /// - Throws: `.goingAway` after a GOAWAY was received or `goAway()` was called,
    ///   `.streamIDsExhausted` when the connection ran out of ids, `.invalidHeader`, `.sessionClosed`.
    package func submitRequest(method: String, scheme: String = "https", authority: String, path: String,
                              headers: [HTTP2Header], body: [UInt8], tag: UInt64 = 0) throws -> Int32 {
        defer { deliver() }
        return try core.submitRequest(method: method, scheme: scheme, authority: authority, path: path,
                                      headers: headers, body: body, tag: tag)
    }

    /// Queues one request whose header fields are packed already, in two blocks: `request`, this
    /// request's own, and `shared`, a block the caller keeps across requests (a connection's
    /// `:method`, `:scheme`, `:authority` and `authorization`, see `startShared`). The pseudo-headers
    /// go out first, the shared ones before the request's (`:path`), then the request's fields,
    /// then the shared ones. Each pseudo-header belongs in one of the two blocks, not both; with
    /// an empty `shared`, start `request` with `startRequest`. Names must be lower case already.
    /// The body is copied into a data provider.
    ///
    /// - Throws: as the other `submitRequest`; `.invalidHeader` also for a pseudo-header after a
    ///   regular field.
    package func submitRequest(_ request: HTTP2HeaderBlock, shared: HTTP2HeaderBlock = HTTP2HeaderBlock(),
                              body: [UInt8], tag: UInt64 = 0) throws -> Int32 {
        defer { deliver() }
        return try core.submitRequest(request, shared: shared, body: body, tag: tag)
    }

    /// Empties `block` and writes the pseudo-headers every request on a connection shares into
    /// it, for `submitRequest(_:shared:body:)`'s `shared` (the request's block then holds `:path`).
    package static func startShared(_ block: inout HTTP2HeaderBlock, method: String = "POST", scheme: String = "https",
                                   authority: String) {
        block.removeAll()
        block.append(":method", method)
        block.append(":scheme", scheme)
        block.append(":authority", authority)
    }

    /// Empties `block` and writes a request's pseudo-headers into it, `:path` (its value written
    /// by `path`) never indexed, since it changes with every request.
    package static func startRequest(_ block: inout HTTP2HeaderBlock, method: String = "POST", scheme: String = "https",
                                    authority: String, path: (inout [UInt8]) -> Void) {
        block.removeAll()
        block.append(":method", method)
        block.append(":scheme", scheme)
        block.append(":authority", authority)
        block.append(":path", neverIndex: true, value: path)
    }

    /// Resets the stream with CANCEL (e.g. its deadline passed). The delegate hears `.cancelled`
    /// exactly once, before this returns; a stream already completed is left alone.
    package func cancel(stream id: Int32) {
        core.cancel(stream: id)
        deliver()
    }

    /// Sends a PING; `sessionDidReceivePingAck` tells the owner the connection is still alive.
    package func ping() {
        guard let session = core.session else { return }
        _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Starts a graceful close: sends GOAWAY(NO_ERROR); open streams still complete, new
    /// submissions throw `.goingAway`. Close the connection when `wantsRead` and `wantsWrite` fall.
    package func goAway() {
        guard let session = core.session else { return }
        core.submitGoAway(lastStreamID: nghttp2_session_get_last_proc_stream_id(session),
                          errorCode: HTTP2ErrorCode.noError, debugData: [])
    }

    /// Tears the session down at once (connection lost, or closing after an error).
    ///
    /// Every stream still open completes before this returns, with `.connectionClosed` and
    /// `errorCode`. The rule for `wasProcessed`: false when the request never left us (its HEADERS
    /// were not sent) or lies above a received GOAWAY's last_stream_id; true otherwise, because a
    /// server may act on a request without answering it. Later calls throw `.sessionClosed`.
    package func terminate(errorCode: UInt32 = HTTP2ErrorCode.noError) {
        core.terminate(errorCode: errorCode)
        deliver()
    }

    /// Delivers recorded events outside nghttp2. Re-entrant calls leave the work to the outer loop,
    /// so events keep their order.
    private func deliver() {
        guard !delivering else { return }
        delivering = true
        defer { delivering = false }
        while !core.events.isEmpty {
            // Swapped with a spare list, so neither list's storage is given up between batches.
            var batch = spareEvents
            swap(&batch, &core.events)
            // The spare's storage is the events list's now: one owner, or the first event added
            // during this batch would copy it.
            spareEvents = []
            defer {
                batch.removeAll(keepingCapacity: true)
                spareEvents = batch
            }
            for event in batch {
                guard let delegate else { continue }
                switch event {
                case .completed(let id, let tag, let result):
                    delegate.session(self, stream: id, tag: tag, didComplete: result)
                case .maxConcurrentStreams(let value):
                    delegate.session(self, didUpdateMaxConcurrentStreams: value)
                case .goAway(let last, let code, let debug, let refused):
                    delegate.session(self, didReceiveGoAway: last, errorCode: code, debugData: debug, refused: refused)
                case .pingAck:
                    delegate.sessionDidReceivePingAck(self)
                }
            }
        }
    }
}

enum ClientEvent {
    case completed(Int32, UInt64, Result<HTTP2Response, HTTP2StreamError>)
    case maxConcurrentStreams(UInt32)
    case goAway(Int32, UInt32, [UInt8], [UInt64])
    case pingAck
}
