internal import Basics
internal import CNghttp2

/// One request in flight: the body it sends (as `OutgoingBody`), the response it gathers, and
/// the owner's tag for it.
final class ClientStream: OutgoingBody {
    /// What the owner gave `submitRequest` to know the stream by (the pool's push id), handed
    /// back with its completion: the owner keeps no table of its own from stream ids.
    let tag: UInt64
    var headersSent = false
    var status: Int?
    var headers = HTTP2HeaderBlock()
    var body: [UInt8] = []
    var endStreamReceived = false

    init(_ body: [UInt8], tag: UInt64) {
        self.tag = tag
        super.init(body)
    }
}

final class NGHTTP2ClientSession: NGHTTP2Session {
    var streams = IDTable<Int32, ClientStream>()
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
                       headers: [HTTP2Header], body: [UInt8], tag: UInt64) throws -> Int32 {
        var request = HTTP2HeaderBlock()
        HTTP2ClientSession.startRequest(&request, method: method, scheme: scheme, authority: authority) {
            $0.append(contentsOf: path.utf8)
        }
        for header in headers {
            // Names come lower-cased from their builders; only a stray capital costs a new string.
            let name = header.name.utf8.contains(where: { $0 &- UInt8(ascii: "A") < 26 }) ? header.name.lowercased() : header.name
            if name.hasPrefix(":") {
                throw HTTP2Error(code: .invalidHeader, message: "pseudo-header \(name) is set by the session; pass it as an argument instead")
            }
            request.append(name, header.value, neverIndex: header.neverIndex)
        }
        return try submitRequest(request, shared: HTTP2HeaderBlock(), body: body, tag: tag)
    }

    /// `request` starts with the pseudo-headers (see `HTTP2ClientSession.startRequest`); the
    /// fields of `shared` follow its own.
    func submitRequest(_ request: HTTP2HeaderBlock, shared: HTTP2HeaderBlock, body: [UInt8], tag: UInt64) throws -> Int32 {
        let session = try requireSession()
        if goAwayReceived {
            throw HTTP2Error(code: .goingAway, message: "the server sent GOAWAY; submit this request on another connection")
        }
        if goAwaySent {
            throw HTTP2Error(code: .goingAway, message: "this session is closing (GOAWAY sent); submit this request on another connection")
        }
        let id = try withPackedHeaders(request, shared) { nva, count in
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
        streams[id] = ClientStream(body, tag: tag)
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
        for id in streams.sortedKeys {
            guard let stream = streams[id] else { continue }
            let processed = stream.headersSent && !(goAwayReceived && id > goAwayLastStreamID)
            complete(id, .failure(HTTP2StreamError(errorCode: errorCode, reason: .connectionClosed, wasProcessed: processed)))
        }
        destroy()
    }

    private func complete(_ id: Int32, _ result: Result<HTTP2Response, HTTP2StreamError>) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        events.append(.completed(id, stream.tag, result))
    }

    /// A client stream is its own request's body; nghttp2 asks for it only until it is all sent.
    override func outgoingBody(stream id: Int32) -> OutgoingBody? { streams[id] }
    override func outgoingBodySent(stream id: Int32) {}

    // MARK: Hooks

    override func onHeader(_ frame: UnsafePointer<nghttp2_frame>, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard let stream = streams[frame.pointee.hd.stream_id] else { return 0 }
        if name.first == UInt8(ascii: ":"), Self.statusName.withUTF8Buffer({ sameBytes(name, $0) }) {
            stream.status = Self.statusCode(value)
            stream.headers.removeAll()  // a final response replaces any 1xx before it
        } else if name.first != UInt8(ascii: ":") {
            stream.headers.append(name: name, value: value)
        }
        return 0
    }

    private static let statusName: StaticString = ":status"

    /// `:status`'s three digits (nghttp2 has checked them), or nil for anything else.
    private static func statusCode(_ digits: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count <= 3 else { return nil }
        var code = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9") else { return nil }
            code = code * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return code
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
            // Every stream the GOAWAY refuses is still here: the unsent ones are completed just
            // below, the sent ones when nghttp2 closes them right after this callback.
            let refused = streams.sortedKeys.filter { $0 > goAwayLastStreamID }.compactMap { streams[$0]?.tag }
            events.append(.goAway(goaway.last_stream_id, goaway.error_code,
                                  bytesOf(goaway.opaque_data, goaway.opaque_data_len).array, refused))
            // Requests nghttp2 still holds back (beyond a lowered limit) would only fail when a
            // slot frees up, maybe never: end them now so the owner can retry them elsewhere.
            // Sent streams above last_stream_id are closed by nghttp2 right after this callback.
            for id in streams.sortedKeys where id > goAwayLastStreamID && streams[id]?.headersSent == false {
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
            complete(id, .success(HTTP2Response(status: status, fields: stream.headers, body: stream.body)))
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
