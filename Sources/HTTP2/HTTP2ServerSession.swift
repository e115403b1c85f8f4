internal import CNghttp2

/// What the owner of a server session hears. Called on the owner's loop, never from inside
/// nghttp2, so an implementation may respond at once.
package protocol HTTP2ServerDelegate: AnyObject {
    /// A complete request (END_STREAM seen). Answer with `respond` or `reset`.
    func session(_ session: HTTP2ServerSession, didReceive request: HTTP2Request, stream id: Int32)
    /// The stream is gone (answered, reset by either side, or torn down): drop any state for it.
    func session(_ session: HTTP2ServerSession, streamDidClose id: Int32, errorCode: UInt32)
    /// The client is going away. Optional: the default does nothing.
    func session(_ session: HTTP2ServerSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])
}

extension HTTP2ServerDelegate {
    package func session(_ session: HTTP2ServerSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {}
}

/// The server side of one HTTP/2 connection, as a pure protocol engine (no sockets, no threads):
/// what an APNs emulator needs to act like Apple, including run-time SETTINGS changes,
/// REFUSED_STREAM and GOAWAY with debug data.
///
/// Confined to the one event loop that owns the connection; not thread-safe.
package final class HTTP2ServerSession {
    /// Held weakly: the owner of the session is usually its delegate.
    package private(set) weak var delegate: HTTP2ServerDelegate?
    private let core: NGHTTP2ServerSession
    private var delivering = false

    /// Submits our SETTINGS (MAX_CONCURRENT_STREAMS) at once; nghttp2 refuses streams beyond it
    /// with REFUSED_STREAM, as Apple does.
    ///
    /// - Parameter maxRequestBodySize: a request body above this is reset with CANCEL, so a
    ///   client cannot grow our memory without bound. Large enough by default for an emulator to
    ///   see an oversize APNs payload and answer 413 itself.
    package init(delegate: HTTP2ServerDelegate, maxConcurrentStreams: UInt32, maxRequestBodySize: Int = 1 << 20) throws {
        self.delegate = delegate
        self.core = try NGHTTP2ServerSession(maxConcurrentStreams: maxConcurrentStreams, maxRequestBodySize: maxRequestBodySize)
    }

    /// Feeds bytes read from the connection; the delegate hears every completed request before
    /// this returns.
    ///
    /// - Throws: `HTTP2Error.protocolError` for bytes that are not HTTP/2 (a bad preface, a
    ///   broken frame): flush the output (our GOAWAY), then `terminate()`.
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
    /// False once the connection has nothing left to read.
    package var wantsRead: Bool { core.wantsRead }
    /// The client sent GOAWAY: it opens no more streams.
    package var goAwayReceived: Bool { core.goAwayReceived }
    /// Requests received (or being received) and not yet closed.
    package var openStreamCount: Int { core.streams.count }

    /// Queues the response; an empty body ends the stream with the HEADERS frame.
    ///
    /// - Throws: `.noSuchStream` when the stream was already answered, reset or closed;
    ///   `.invalidHeader`; `.sessionClosed`.
    package func respond(stream id: Int32, status: Int, headers: [HTTP2Header], body: [UInt8]) throws {
        defer { deliver() }
        try core.respond(stream: id, status: status, headers: headers, body: body)
    }

    /// Resets one stream, e.g. with `HTTP2ErrorCode.refusedStream` to tell the client it was not
    /// processed and may be retried elsewhere.
    package func reset(stream id: Int32, errorCode: UInt32) {
        guard let session = core.session, core.streams[id] != nil else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, errorCode)
    }

    /// Sends a new SETTINGS_MAX_CONCURRENT_STREAMS at run time, as Apple does (1 before the first
    /// authenticated request, ~1000 after, 1 again after a rejection).
    package func updateMaxConcurrentStreams(_ value: UInt32) {
        guard let session = core.session else { return }
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: value)
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
    }

    /// Sends GOAWAY. Streams above `lastStreamID` (default: the last one we have seen) are closed
    /// as not processed; those at or below it may still be answered. Apple sends debug data
    /// `{"reason":"Shutdown"}` when it restarts a server.
    package func goAway(lastStreamID: Int32? = nil, errorCode: UInt32 = HTTP2ErrorCode.noError, debugData: [UInt8] = []) {
        guard let session = core.session else { return }
        core.submitGoAway(lastStreamID: lastStreamID ?? nghttp2_session_get_last_proc_stream_id(session),
                          errorCode: errorCode, debugData: debugData)
    }

    /// Tears the session down at once. Every open stream is reported closed (with `errorCode`)
    /// before this returns, because nghttp2_session_del reports nothing.
    package func terminate(errorCode: UInt32 = HTTP2ErrorCode.noError) {
        core.terminate(errorCode: errorCode)
        deliver()
    }

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
                case .request(let request, let id):
                    delegate.session(self, didReceive: request, stream: id)
                case .closed(let id, let code):
                    delegate.session(self, streamDidClose: id, errorCode: code)
                case .goAway(let last, let code, let debug):
                    delegate.session(self, didReceiveGoAway: last, errorCode: code, debugData: debug)
                }
            }
        }
    }
}

enum ServerEvent {
    case request(HTTP2Request, Int32)
    case closed(Int32, UInt32)
    case goAway(Int32, UInt32, [UInt8])
}
