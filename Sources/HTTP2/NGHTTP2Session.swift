internal import CNghttp2

/// The request or response body a data provider hands to nghttp2, chunk by chunk. Not final:
/// a client stream is its own request's body, one object per stream rather than two.
class OutgoingBody {
    let bytes: [UInt8]
    var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

/// Owns one `nghttp2_session` and the parts both roles share: I/O through `mem_recv`/`mem_send`,
/// body providers, header packing, and the record of a connection-level failure.
///
/// Subclasses override the `on…` hooks, which the file-scope trampolines call. Hooks never
/// throw and never call the delegate: they record events that the session (`HTTP2ClientSession`, `HTTP2ServerSession`) delivers after
/// nghttp2 has returned, so a delegate may call back into the session (even `terminate()`).
class NGHTTP2Session {
    private(set) var session: OpaquePointer?
    /// Bytes already serialized by `mem_send` but not yet taken by the owner. Bounded by what
    /// nghttp2 may emit: flow-control windows, SETTINGS/PING acks and the owner's own submissions.
    var outbox: [UInt8] = []
    /// The bodies a server's responses still send (a client stream is its own body: see
    /// `outgoingBody(stream:)`).
    var outgoing: [Int32: OutgoingBody] = [:]
    /// Set once the session can no longer be trusted: every later `receive` throws it.
    var failure: HTTP2Error?
    /// The text of nghttp2's last error callback, appended to protocol errors for the logs.
    var lastLibraryMessage: String?
    /// A GOAWAY with a non-zero code that nghttp2 sent on our behalf (the peer broke the protocol).
    var sentErrorGoAway: (code: UInt32, debug: String)?
    var goAwaySent = false
    /// The code of a GOAWAY the owner itself submitted, so it is not mistaken for a protocol error.
    var ownerGoAwayCode: UInt32?
    var goAwayReceived = false

    init(server: Bool, configure: (OpaquePointer) -> Void) throws {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw HTTP2Error(code: .internalError, message: "nghttp2 could not allocate callbacks (out of memory)")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        installTrampolines(callbacks)

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw HTTP2Error(code: .internalError, message: "nghttp2 could not allocate options (out of memory)")
        }
        defer { nghttp2_option_del(option) }
        configure(option)

        var created: OpaquePointer?
        let user = Unmanaged.passUnretained(self).toOpaque()
        let rv = server
            ? nghttp2_session_server_new2(&created, callbacks, user, option)
            : nghttp2_session_client_new2(&created, callbacks, user, option)
        guard rv == 0, let created else {
            throw HTTP2Error(code: .internalError, message: "nghttp2 could not create a session: \(libraryText(rv))")
        }
        session = created
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// Frees the nghttp2 session now. nghttp2_session_del calls no stream-close callback:
    /// the subclass must have ended its streams itself.
    func destroy() {
        if let session { nghttp2_session_del(session) }
        session = nil
        outbox.removeAll()
        outgoing.removeAll()
        failure = HTTP2Error(code: .sessionClosed, message: "the session was terminated; open a new connection")
    }

    func requireSession() throws -> OpaquePointer {
        if let failure { throw failure }
        guard let session else {
            throw HTTP2Error(code: .sessionClosed, message: "the session was terminated; open a new connection")
        }
        return session
    }

    // MARK: I/O

    func receive(_ bytes: UnsafeRawBufferPointer) throws {
        let session = try requireSession()
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let rv = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if rv == ssize_t(NGHTTP2_ERR_NOMEM.rawValue) || rv == ssize_t(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) {
            let error = HTTP2Error(code: .internalError, message: "nghttp2 failed while reading: \(libraryText(Int32(rv))); terminate the session")
            failure = error
            throw error
        }
        if rv < 0 {
            let detail = lastLibraryMessage.map { " (\($0))" } ?? ""
            let error = HTTP2Error(code: .protocolError,
                                   message: "the peer did not speak valid HTTP/2: \(libraryText(Int32(rv)))\(detail); flush the output, then terminate the session")
            failure = error
            throw error
        }
        try settle()
    }

    /// Serializes what nghttp2 queued and throws if that includes a GOAWAY for the peer's error.
    func settle() throws {
        // nghttp2 answers most connection errors by queueing a GOAWAY and returning success;
        // serializing now is how we learn of it before returning.
        drain()
        if let failure { throw failure }
        if let sent = sentErrorGoAway {
            let error = HTTP2Error(code: .protocolError,
                                   message: "the peer broke HTTP/2 (we sent GOAWAY \(codeName(sent.code))\(sent.debug.isEmpty ? "" : ": \(sent.debug)")); flush the output, then terminate the session")
            failure = error
            throw error
        }
    }

    /// Runs `mem_send` until nghttp2 has nothing more, appending everything to `outbox`.
    func drain() {
        guard let session else { return }
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                if failure == nil {
                    failure = HTTP2Error(code: .internalError,
                                         message: "nghttp2 could not serialize output: \(libraryText(Int32(n))); terminate the session")
                }
                return
            }
            guard n > 0, let data else { return }
            outbox.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
    }

    func takeOutput(into buffer: inout [UInt8]) {
        drain()
        if buffer.isEmpty {
            swap(&buffer, &outbox)
        } else {
            buffer.append(contentsOf: outbox)
            outbox.removeAll(keepingCapacity: true)
        }
    }

    var wantsWrite: Bool {
        guard let session else { return false }
        return !outbox.isEmpty || nghttp2_session_want_write(session) != 0
    }

    var wantsRead: Bool {
        guard let session, failure == nil else { return false }
        return nghttp2_session_want_read(session) != 0
    }

    // MARK: Submitting

    /// Packs the fields into a block and hands them on as below (responses, and requests made
    /// from a list of fields).
    func withPackedHeaders<R>(_ fields: [HTTP2Header],
                              _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) throws -> R {
        try withPackedHeaders(HTTP2HeaderBlock(fields), HTTP2HeaderBlock(), body)
    }

    /// Hands nghttp2 one `nghttp2_nv` list (in a temporary, on the stack when small) pointing
    /// into the blocks' own bytes: the pseudo-headers of `shared`, every field of `request`,
    /// then the regular fields of `shared`, so both blocks' pseudo-headers come first as HTTP/2
    /// wants. nghttp2 deep-copies them during `submit`: nothing outlives the call, nothing is
    /// copied here.
    ///
    /// - Throws: `.invalidHeader` with the first problem a block found as it was filled (a name
    ///   that is not a lower-case token, a value with CR, LF or NUL, a pseudo-header after a
    ///   regular field).
    func withPackedHeaders<R>(_ request: HTTP2HeaderBlock, _ shared: HTTP2HeaderBlock,
                              _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) throws -> R {
        if let problem = request.problem ?? shared.problem { throw HTTP2Error(code: .invalidHeader, message: problem) }
        let count = request.count + shared.count
        return request.bytes.withUnsafeBufferPointer { requestBytes in
            shared.bytes.withUnsafeBufferPointer { sharedBytes in
                withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, count)) { nvs in
                    var index = 0
                    func add(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, _ neverIndex: Bool) {
                        let flags = neverIndex ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
                        (nvs.baseAddress! + index).initialize(to: nghttp2_nv(
                            name: UnsafeMutablePointer(mutating: name.baseAddress!), value: UnsafeMutablePointer(mutating: value.baseAddress!),
                            namelen: name.count, valuelen: value.count, flags: flags))
                        index += 1
                    }
                    shared.forEachField(in: sharedBytes) { name, value, neverIndex in
                        if name.first == UInt8(ascii: ":") { add(name, value, neverIndex) }
                    }
                    request.forEachField(in: requestBytes, add)
                    shared.forEachField(in: sharedBytes) { name, value, neverIndex in
                        if name.first != UInt8(ascii: ":") { add(name, value, neverIndex) }
                    }
                    return body(UnsafePointer(nvs.baseAddress!), index)
                }
            }
        }
    }

    /// Calls `submit` with a data provider for `body`, or with none when the body is empty
    /// (then HEADERS carries END_STREAM).
    func withDataProvider<R>(hasBody: Bool, _ submit: (UnsafePointer<nghttp2_data_provider>?) -> R) -> R {
        guard hasBody else { return submit(nil) }
        var provider = nghttp2_data_provider()
        provider.source.ptr = nil
        provider.read_callback = { _, streamID, buffer, length, flags, _, user in
            guard let user, let buffer, let flags else { return ssize_t(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            let core = Unmanaged<NGHTTP2Session>.fromOpaque(user).takeUnretainedValue()
            return core.readBody(stream: streamID, into: buffer, length: length, flags: flags)
        }
        return withUnsafePointer(to: &provider) { submit($0) }
    }

    /// nghttp2 asks how much of the body goes in the next DATA frame. The bytes are not copied
    /// into its frame buffer (`NO_COPY`): `sendBody` appends them to `outbox` straight from the
    /// body, one copy fewer per push.
    func readBody(stream id: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                  flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let body = outgoingBody(stream: id) else {
            // Cancelled or torn down under nghttp2: have it reset the stream rather than trap.
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let count = min(length, body.bytes.count - body.offset)
        flags.pointee |= NGHTTP2_DATA_FLAG_NO_COPY.rawValue
        if body.offset + count == body.bytes.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        }
        return count
    }

    /// Writes one whole DATA frame that `readBody` sized: nghttp2's 9-byte header, the pad-length
    /// byte and padding if it chose any, and `length` bytes of the body from where it stands.
    /// Called from inside `mem_send`, after every earlier frame has reached `outbox`.
    func sendBody(stream id: Int32, header: UnsafePointer<UInt8>, length: Int, padding: Int) -> Int32 {
        guard let body = outgoingBody(stream: id), body.offset + length <= body.bytes.count else {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        outbox.append(contentsOf: UnsafeBufferPointer(start: header, count: 9))
        if padding > 0 { outbox.append(UInt8(padding - 1)) }
        body.bytes.withUnsafeBufferPointer { source in
            outbox.append(contentsOf: UnsafeBufferPointer(rebasing: source[body.offset..<(body.offset + length)]))
        }
        if padding > 1 { outbox.append(contentsOf: repeatElement(0, count: padding - 1)) }
        body.offset += length
        if body.offset == body.bytes.count { outgoingBodySent(stream: id) }
        return 0
    }

    func submitGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        guard let session else { return }
        let rv = debugData.withUnsafeBufferPointer { debug in
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode,
                                  debug.baseAddress, debug.count)
        }
        if rv == 0 {
            goAwaySent = true
            ownerGoAwayCode = errorCode
        }
    }

    // MARK: Hooks (overridden by the roles)

    func onBeginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 { 0 }
    /// Name and value point into nghttp2's buffers, valid during the call only.
    func onHeader(_ frame: UnsafePointer<nghttp2_frame>, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 { 0 }
    func onDataChunk(stream id: Int32, _ data: UnsafeBufferPointer<UInt8>) -> Int32 { 0 }
    func onFrameRecv(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        if frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) { goAwayReceived = true }
        return 0
    }
    func onStreamClose(stream id: Int32, errorCode: UInt32) -> Int32 {
        if !outgoing.isEmpty { outgoing[id] = nil }
        return 0
    }
    /// The body stream `id` still sends, if any.
    func outgoingBody(stream id: Int32) -> OutgoingBody? { outgoing[id] }
    /// Stream `id`'s whole body is in `outbox`.
    func outgoingBodySent(stream id: Int32) { outgoing[id] = nil }
    func onFrameSend(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        if frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) {
            goAwaySent = true
            let goaway = frame.pointee.goaway
            if goaway.error_code != 0 && goaway.error_code != ownerGoAwayCode && sentErrorGoAway == nil {
                sentErrorGoAway = (goaway.error_code, bytesOf(goaway.opaque_data, goaway.opaque_data_len).asText)
            }
        }
        return 0
    }
    func onFrameNotSend(_ frame: UnsafePointer<nghttp2_frame>, libraryError: Int32) -> Int32 { 0 }
}

// MARK: Trampolines: recover the core from the user data; never throw or trap across C.

private func core(_ user: UnsafeMutableRawPointer?) -> NGHTTP2Session? {
    guard let user else { return nil }
    return Unmanaged<NGHTTP2Session>.fromOpaque(user).takeUnretainedValue()
}

private func installTrampolines(_ callbacks: OpaquePointer) {
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
        guard let frame, let core = core(user) else { return 0 }
        return core.onBeginHeaders(frame)
    }
    nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
        guard let frame, let core = core(user) else { return 0 }
        return core.onHeader(frame, name: bytesOf(name, nameLength).buffer, value: bytesOf(value, valueLength).buffer)
    }
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, user in
        guard let core = core(user) else { return 0 }
        return core.onDataChunk(stream: streamID, UnsafeBufferPointer(start: data, count: data == nil ? 0 : length))
    }
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
        guard let frame, let core = core(user) else { return 0 }
        return core.onFrameRecv(frame)
    }
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, user in
        guard let core = core(user) else { return 0 }
        return core.onStreamClose(stream: streamID, errorCode: errorCode)
    }
    nghttp2_session_callbacks_set_send_data_callback(callbacks) { _, frame, header, length, _, user in
        guard let frame, let header, let core = core(user) else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
        return core.sendBody(stream: frame.pointee.hd.stream_id, header: header, length: length,
                             padding: Int(frame.pointee.data.padlen))
    }
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, user in
        guard let frame, let core = core(user) else { return 0 }
        return core.onFrameSend(frame)
    }
    nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { _, frame, libraryError, user in
        guard let frame, let core = core(user) else { return 0 }
        return core.onFrameNotSend(frame, libraryError: libraryError)
    }
    nghttp2_session_callbacks_set_error_callback2(callbacks) { _, _, message, length, user in
        guard let core = core(user) else { return 0 }
        core.lastLibraryMessage = bytesOf(message.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }, length).asText
        return 0
    }
}

// MARK: Helpers

struct ByteView {
    let buffer: UnsafeBufferPointer<UInt8>
    var asText: String { String(decoding: buffer, as: UTF8.self) }
    var array: [UInt8] { Array(buffer) }
}

func bytesOf(_ pointer: UnsafePointer<UInt8>?, _ length: Int) -> ByteView {
    ByteView(buffer: UnsafeBufferPointer(start: pointer, count: pointer == nil ? 0 : length))
}

func bytesOf(_ pointer: UnsafeMutablePointer<UInt8>?, _ length: Int) -> ByteView {
    bytesOf(pointer.map { UnsafePointer($0) }, length)
}

func libraryText(_ code: Int32) -> String {
    String(cString: nghttp2_strerror(code))
}

func codeName(_ code: UInt32) -> String {
    switch code {
    case 0x0: "NO_ERROR"
    case 0x1: "PROTOCOL_ERROR"
    case 0x2: "INTERNAL_ERROR"
    case 0x3: "FLOW_CONTROL_ERROR"
    case 0x4: "SETTINGS_TIMEOUT"
    case 0x5: "STREAM_CLOSED"
    case 0x6: "FRAME_SIZE_ERROR"
    case 0x7: "REFUSED_STREAM"
    case 0x8: "CANCEL"
    case 0x9: "COMPRESSION_ERROR"
    case 0xa: "CONNECT_ERROR"
    case 0xb: "ENHANCE_YOUR_CALM"
    case 0xc: "INADEQUATE_SECURITY"
    case 0xd: "HTTP_1_1_REQUIRED"
    default: "0x\(String(code, radix: 16))"
    }
}
