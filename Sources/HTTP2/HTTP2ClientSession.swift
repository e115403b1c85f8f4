internal import CNghttp2

/// What the owner of a client session hears. Called on the owner's loop, never from inside
/// nghttp2, so an implementation may call back into the session (submit, cancel, terminate).
public protocol HTTP2ClientDelegate: AnyObject {
    /// Called exactly once per stream that `submitRequest` returned, teardown included,
    /// so the owner can end every push exactly once.
    func session(_ session: HTTP2ClientSession, stream id: Int32, didComplete result: Result<HTTP2Response, HTTP2StreamError>)
    /// Called for every SETTINGS frame the server sends, with the live limit: Apple starts at 1,
    /// raises it after the first authenticated request, and lowers it again after a rejection.
    func session(_ session: HTTP2ClientSession, didUpdateMaxConcurrentStreams value: UInt32)
    /// Called before the completions of the streams the GOAWAY refuses, so the owner can stop
    /// routing new work here first.
    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])
    /// A PING we sent came back: the connection is alive.
    func sessionDidReceivePingAck(_ session: HTTP2ClientSession)
}

/// The client side of one HTTP/2 connection, as a pure protocol engine: bytes in through
/// `receive`, bytes out through `takeOutput`, no sockets and no threads.
///
/// Confined to the one event loop that owns the connection; not thread-safe.
///
/// The owner must never have more streams open than `remoteMaxConcurrentStreams`: nghttp2 would
/// queue the excess in an unbounded list, where pushes wait without a deadline. Keep the backlog
/// in the owner's bounded queue instead. Call `terminate()` before dropping a session that still
/// has streams: `deinit` frees nghttp2 but cannot report completions.
public final class HTTP2ClientSession {
    /// Held weakly: the owner of the session is usually its delegate.
    public private(set) weak var delegate: HTTP2ClientDelegate?
    private let core: ClientCore
    private var delivering = false

    /// Submits our SETTINGS (ENABLE_PUSH 0, the stream window) at once; they go out with the
    /// first `takeOutput`, after the connection preface.
    ///
    /// - Parameters:
    ///   - initialWindowSize: stream and connection receive window; larger than HTTP/2's 64 KiB
    ///     default so many concurrent responses never stall on WINDOW_UPDATE round trips.
    ///   - maxResponseBodySize: a response body above this resets its stream
    ///     (`.responseTooLarge`), so a misbehaving server cannot grow our memory without bound.
    public init(delegate: HTTP2ClientDelegate, initialWindowSize: Int = 1 << 20,
                maxResponseBodySize: Int = 1 << 20) throws {
        guard initialWindowSize >= 65_535 && initialWindowSize <= Int(Int32.max) else {
            throw HTTP2Error(code: .internalError, message: "initialWindowSize must be between 65535 and 2^31-1, got \(initialWindowSize)")
        }
        self.delegate = delegate
        self.core = try ClientCore(initialWindowSize: Int32(initialWindowSize), maxResponseBodySize: maxResponseBodySize)
    }

    /// Feeds bytes read from the connection. Delegate calls for everything they completed
    /// happen before this returns.
    ///
    /// - Throws: `HTTP2Error.protocolError` when the peer broke HTTP/2 (our GOAWAY is then in
    ///   the output: flush it, then `terminate()`); `.sessionClosed` after `terminate()`.
    public func receive(_ bytes: UnsafeRawBufferPointer) throws {
        defer { deliver() }
        try core.receive(bytes)
    }

    /// Appends everything nghttp2 has to send to `buffer`, so the owner makes one TLS write per batch.
    public func takeOutput(into buffer: inout [UInt8]) {
        core.takeOutput(into: &buffer)
        deliver()
    }

    /// True when `takeOutput` would produce bytes.
    public var wantsWrite: Bool { core.wantsWrite }
    /// False once the connection has nothing left to read (both sides done, or a fatal error).
    public var wantsRead: Bool { core.wantsRead }

    /// The server's live SETTINGS_MAX_CONCURRENT_STREAMS. Until its first SETTINGS arrive this is
    /// 1, the conservative value Apple itself starts with.
    public var remoteMaxConcurrentStreams: UInt32 { core.remoteMaxConcurrentStreams }
    /// Streams submitted and not yet completed (including any nghttp2 has not sent yet).
    public var openStreamCount: Int { core.streams.count }
    /// True once the server's first SETTINGS frame arrived: before that the limit is a guess.
    public var hasReceivedSettings: Bool { core.hasReceivedSettings }
    /// True once the server sent GOAWAY: open no more streams here.
    public var goAwayReceived: Bool { core.goAwayReceived }

    /// Queues one request; its bytes go out with the next `takeOutput`.
    ///
    /// The body is copied into a data provider. Header names are lower-cased; `:path` is never
    /// indexed by HPACK. Returns the stream id that the completion will carry.
    ///
    /// - Throws: `.goingAway` after a GOAWAY was received or `goAway()` was called,
    ///   `.streamIDsExhausted` when the connection ran out of ids, `.invalidHeader`, `.sessionClosed`.
    public func submitRequest(method: String, scheme: String = "https", authority: String, path: String,
                              headers: [HTTP2Header], body: [UInt8]) throws -> Int32 {
        defer { deliver() }
        return try core.submitRequest(method: method, scheme: scheme, authority: authority, path: path,
                                      headers: headers, body: body)
    }

    /// Resets the stream with CANCEL (e.g. its deadline passed). The delegate hears `.cancelled`
    /// exactly once, before this returns; a stream already completed is left alone.
    public func cancel(stream id: Int32) {
        core.cancel(stream: id)
        deliver()
    }

    /// Moves the id the next request will get (odd, above every id used so far), so a test can
    /// bring a connection to the end of its 2^31 stream ids without sending a billion requests.
    package func setNextStreamID(_ id: Int32) throws {
        let session = try core.requireSession()
        let rv = nghttp2_session_set_next_stream_id(session, id)
        guard rv == 0 else {
            throw HTTP2Error(code: .internalError, message: "nghttp2 refused next stream id \(id): \(libraryText(rv))")
        }
    }

    /// Sends a PING; `sessionDidReceivePingAck` tells the owner the connection is still alive.
    public func ping() {
        guard let session = core.session else { return }
        _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Starts a graceful close: sends GOAWAY(NO_ERROR); open streams still complete, new
    /// submissions throw `.goingAway`. Close the connection when `wantsRead` and `wantsWrite` fall.
    public func goAway() {
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
    public func terminate(errorCode: UInt32 = HTTP2ErrorCode.noError) {
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
            let batch = core.events
            core.events.removeAll()
            for event in batch {
                guard let delegate else { continue }
                switch event {
                case .completed(let id, let result):
                    delegate.session(self, stream: id, didComplete: result)
                case .maxConcurrentStreams(let value):
                    delegate.session(self, didUpdateMaxConcurrentStreams: value)
                case .goAway(let last, let code, let debug):
                    delegate.session(self, didReceiveGoAway: last, errorCode: code, debugData: debug)
                case .pingAck:
                    delegate.sessionDidReceivePingAck(self)
                }
            }
        }
    }
}

enum ClientEvent {
    case completed(Int32, Result<HTTP2Response, HTTP2StreamError>)
    case maxConcurrentStreams(UInt32)
    case goAway(Int32, UInt32, [UInt8])
    case pingAck
}

final class ClientStream {
    var headersSent = false
    var status: Int?
    var headers: [HTTP2Header] = []
    var body: [UInt8] = []
    var endStreamReceived = false
}

final class ClientCore: SessionCore {
    var streams: [Int32: ClientStream] = [:]
    /// Bounded by the frames of one `receive`/`takeOutput` batch: delivered before those return.
    var events: [ClientEvent] = []
    var hasReceivedSettings = false
    var goAwayLastStreamID: Int32 = .max
    let maxResponseBodySize: Int

    init(initialWindowSize: Int32, maxResponseBodySize: Int) throws {
        self.maxResponseBodySize = maxResponseBodySize
        try super.init(server: false) { option in
            // Until the server speaks, assume what Apple starts with rather than nghttp2's "unlimited".
            nghttp2_option_set_peer_max_concurrent_streams(option, 1)
        }
        guard let session else { return }
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(initialWindowSize)),
        ]
        var rv = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        if rv == 0 {
            rv = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, initialWindowSize)
        }
        guard rv == 0 else {
            throw HTTP2Error(code: .internalError, message: "nghttp2 refused our SETTINGS: \(libraryText(rv))")
        }
    }

    var remoteMaxConcurrentStreams: UInt32 {
        guard let session else { return 0 }
        return nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    func submitRequest(method: String, scheme: String, authority: String, path: String,
                       headers: [HTTP2Header], body: [UInt8]) throws -> Int32 {
        let session = try requireSession()
        if goAwayReceived {
            throw HTTP2Error(code: .goingAway, message: "the server sent GOAWAY; submit this request on another connection")
        }
        if goAwaySent {
            throw HTTP2Error(code: .goingAway, message: "this session is closing (GOAWAY sent); submit this request on another connection")
        }
        var fields = [
            HTTP2Header(name: ":method", value: method),
            HTTP2Header(name: ":scheme", value: scheme),
            HTTP2Header(name: ":authority", value: authority),
            HTTP2Header(name: ":path", value: path, neverIndex: true),
        ]
        fields.reserveCapacity(4 + headers.count)
        for header in headers {
            // Names come lower-cased from their builders; only a stray capital costs a new string.
            let name = header.name.utf8.contains(where: { $0 &- UInt8(ascii: "A") < 26 }) ? header.name.lowercased() : header.name
            if name.hasPrefix(":") {
                throw HTTP2Error(code: .invalidHeader, message: "pseudo-header \(name) is set by the session; pass it as an argument instead")
            }
            fields.append(HTTP2Header(name: name, value: header.value, neverIndex: header.neverIndex))
        }
        let id = try withPackedHeaders(fields) { nva, count in
            withDataProvider(hasBody: !body.isEmpty) { provider in
                nghttp2_submit_request(session, nil, nva, count, provider, nil)
            }
        }
        if id < 0 {
            if id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue {
                throw HTTP2Error(code: .streamIDsExhausted, message: "this connection used all its stream ids; open a new one")
            }
            throw HTTP2Error(code: .internalError, message: "nghttp2 refused the request: \(libraryText(id))")
        }
        streams[id] = ClientStream()
        if !body.isEmpty { outgoing[id] = OutgoingBody(body) }
        return id
    }

    func cancel(stream id: Int32) {
        guard streams[id] != nil else { return }
        if let session {
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, HTTP2ErrorCode.cancel)
        }
        let sent = streams[id]?.headersSent ?? false
        complete(id, .failure(HTTP2StreamError(errorCode: HTTP2ErrorCode.cancel, reason: .cancelled, wasProcessed: sent)))
    }

    func terminate(errorCode: UInt32) {
        for id in streams.keys.sorted() {
            guard let stream = streams[id] else { continue }
            let processed = stream.headersSent && !(goAwayReceived && id > goAwayLastStreamID)
            complete(id, .failure(HTTP2StreamError(errorCode: errorCode, reason: .connectionClosed, wasProcessed: processed)))
        }
        destroy()
    }

    private func complete(_ id: Int32, _ result: Result<HTTP2Response, HTTP2StreamError>) {
        guard streams.removeValue(forKey: id) != nil else { return }
        outgoing[id] = nil
        events.append(.completed(id, result))
    }

    // MARK: Hooks

    override func onHeader(_ frame: UnsafePointer<nghttp2_frame>, name: String, value: String) -> Int32 {
        guard let stream = streams[frame.pointee.hd.stream_id] else { return 0 }
        if name == ":status" {
            stream.status = Int(value)
            stream.headers.removeAll()  // a final response replaces any 1xx before it
        } else if !name.hasPrefix(":") {
            stream.headers.append(HTTP2Header(name: name, value: value))
        }
        return 0
    }

    override func onDataChunk(stream id: Int32, _ data: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard let stream = streams[id] else { return 0 }
        if stream.body.count + data.count > maxResponseBodySize {
            if let session {
                _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, HTTP2ErrorCode.cancel)
            }
            complete(id, .failure(HTTP2StreamError(errorCode: HTTP2ErrorCode.cancel, reason: .responseTooLarge, wasProcessed: true)))
            return 0
        }
        stream.body.append(contentsOf: data)
        return 0
    }

    override func onFrameRecv(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        _ = super.onFrameRecv(frame)
        let header = frame.pointee.hd
        let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(header.type) {
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            if endStream, let stream = streams[header.stream_id] { stream.endStreamReceived = true }
        case NGHTTP2_SETTINGS.rawValue:
            if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 {
                hasReceivedSettings = true
                events.append(.maxConcurrentStreams(remoteMaxConcurrentStreams))
            }
        case NGHTTP2_PING.rawValue:
            if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { events.append(.pingAck) }
        case NGHTTP2_GOAWAY.rawValue:
            let goaway = frame.pointee.goaway
            goAwayLastStreamID = min(goAwayLastStreamID, goaway.last_stream_id)
            events.append(.goAway(goaway.last_stream_id, goaway.error_code,
                                  bytesOf(goaway.opaque_data, goaway.opaque_data_len).array))
            // Requests nghttp2 still holds back (beyond a lowered limit) would only fail when a
            // slot frees up, maybe never: end them now so the owner can retry them elsewhere.
            // Sent streams above last_stream_id are closed by nghttp2 right after this callback.
            for id in streams.keys.sorted() where id > goAwayLastStreamID && streams[id]?.headersSent == false {
                complete(id, .failure(HTTP2StreamError(errorCode: HTTP2ErrorCode.refusedStream,
                                                       reason: .refusedByGoAway, wasProcessed: false)))
            }
        default:
            break
        }
        return 0
    }

    override func onFrameSend(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        _ = super.onFrameSend(frame)
        if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), let stream = streams[frame.pointee.hd.stream_id] {
            stream.headersSent = true
        }
        return 0
    }

    override func onFrameNotSend(_ frame: UnsafePointer<nghttp2_frame>, libraryError: Int32) -> Int32 {
        let id = frame.pointee.hd.stream_id
        guard frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), let stream = streams[id], !stream.headersSent else {
            return 0
        }
        // The request never left us (GOAWAY arrived first, or the session is closing): not processed.
        let reason: HTTP2StreamError.Reason = goAwayReceived ? .refusedByGoAway : .connectionClosed
        complete(id, .failure(HTTP2StreamError(errorCode: HTTP2ErrorCode.refusedStream, reason: reason, wasProcessed: false)))
        return 0
    }

    override func onStreamClose(stream id: Int32, errorCode: UInt32) -> Int32 {
        _ = super.onStreamClose(stream: id, errorCode: errorCode)
        guard let stream = streams[id] else { return 0 }
        if stream.endStreamReceived, let status = stream.status {
            // A server may reset (NO_ERROR) after a complete response; the response stands.
            complete(id, .success(HTTP2Response(status: status, headers: stream.headers, body: stream.body)))
            return 0
        }
        let error: HTTP2StreamError
        if goAwayReceived && id > goAwayLastStreamID {
            error = HTTP2StreamError(errorCode: errorCode, reason: .refusedByGoAway, wasProcessed: false)
        } else {
            error = HTTP2StreamError(errorCode: errorCode, reason: .reset,
                                     wasProcessed: errorCode != HTTP2ErrorCode.refusedStream && stream.headersSent)
        }
        complete(id, .failure(error))
        return 0
    }
}
