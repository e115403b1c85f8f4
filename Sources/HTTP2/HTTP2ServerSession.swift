internal import CNghttp2

/// What the owner of a server session hears. Called on the owner's loop, never from inside
/// nghttp2, so an implementation may respond at once.
public protocol HTTP2ServerDelegate: AnyObject {
    /// A complete request (END_STREAM seen). Answer with `respond` or `reset`.
    func session(_ session: HTTP2ServerSession, didReceive request: HTTP2Request, stream id: Int32)
    /// The stream is gone (answered, reset by either side, or torn down): drop any state for it.
    func session(_ session: HTTP2ServerSession, streamDidClose id: Int32, errorCode: UInt32)
    /// The client is going away. Optional: the default does nothing.
    func session(_ session: HTTP2ServerSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])
}

extension HTTP2ServerDelegate {
    public func session(_ session: HTTP2ServerSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {}
}

/// The server side of one HTTP/2 connection, as a pure protocol engine (no sockets, no threads):
/// what an APNs emulator needs to act like Apple, including run-time SETTINGS changes,
/// REFUSED_STREAM and GOAWAY with debug data.
///
/// Confined to the one event loop that owns the connection; not thread-safe.
public final class HTTP2ServerSession {
    /// Held weakly: the owner of the session is usually its delegate.
    public private(set) weak var delegate: HTTP2ServerDelegate?
    private let core: ServerCore
    private var delivering = false

    /// Submits our SETTINGS (MAX_CONCURRENT_STREAMS) at once; nghttp2 refuses streams beyond it
    /// with REFUSED_STREAM, as Apple does.
    ///
    /// - Parameter maxRequestBodySize: a request body above this is reset with CANCEL, so a
    ///   client cannot grow our memory without bound. Large enough by default for an emulator to
    ///   see an oversize APNs payload and answer 413 itself.
    public init(delegate: HTTP2ServerDelegate, maxConcurrentStreams: UInt32, maxRequestBodySize: Int = 1 << 20) throws {
        self.delegate = delegate
        self.core = try ServerCore(maxConcurrentStreams: maxConcurrentStreams, maxRequestBodySize: maxRequestBodySize)
    }

    /// Feeds bytes read from the connection; the delegate hears every completed request before
    /// this returns.
    ///
    /// - Throws: `HTTP2Error.protocolError` for bytes that are not HTTP/2 (a bad preface, a
    ///   broken frame): flush the output (our GOAWAY), then `terminate()`.
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
    /// False once the connection has nothing left to read.
    public var wantsRead: Bool { core.wantsRead }
    /// The client sent GOAWAY: it opens no more streams.
    public var goAwayReceived: Bool { core.goAwayReceived }
    /// Requests received (or being received) and not yet closed.
    public var openStreamCount: Int { core.streams.count }

    /// Queues the response; an empty body ends the stream with the HEADERS frame.
    ///
    /// - Throws: `.noSuchStream` when the stream was already answered, reset or closed;
    ///   `.invalidHeader`; `.sessionClosed`.
    public func respond(stream id: Int32, status: Int, headers: [HTTP2Header], body: [UInt8]) throws {
        defer { deliver() }
        try core.respond(stream: id, status: status, headers: headers, body: body)
    }

    /// Resets one stream, e.g. with `HTTP2ErrorCode.refusedStream` to tell the client it was not
    /// processed and may be retried elsewhere.
    public func reset(stream id: Int32, errorCode: UInt32) {
        guard let session = core.session, core.streams[id] != nil else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, errorCode)
    }

    /// Sends a new SETTINGS_MAX_CONCURRENT_STREAMS at run time, as Apple does (1 before the first
    /// authenticated request, ~1000 after, 1 again after a rejection).
    public func updateMaxConcurrentStreams(_ value: UInt32) {
        guard let session = core.session else { return }
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: value)
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
    }

    /// Sends GOAWAY. Streams above `lastStreamID` (default: the last one we have seen) are closed
    /// as not processed; those at or below it may still be answered. Apple sends debug data
    /// `{"reason":"Shutdown"}` when it restarts a server.
    public func goAway(lastStreamID: Int32? = nil, errorCode: UInt32 = HTTP2ErrorCode.noError, debugData: [UInt8] = []) {
        guard let session = core.session else { return }
        core.submitGoAway(lastStreamID: lastStreamID ?? nghttp2_session_get_last_proc_stream_id(session),
                          errorCode: errorCode, debugData: debugData)
    }

    /// Tears the session down at once. Every open stream is reported closed (with `errorCode`)
    /// before this returns, because nghttp2_session_del reports nothing.
    public func terminate(errorCode: UInt32 = HTTP2ErrorCode.noError) {
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

final class ServerStream {
    var request = HTTP2Request(method: "", path: "", authority: "", scheme: "", headers: [], body: [])
    var discarded = false
    var responded = false
}

final class ServerCore: SessionCore {
    var streams: [Int32: ServerStream] = [:]
    /// Bounded by the frames of one batch: delivered before `receive`/`takeOutput` return.
    var events: [ServerEvent] = []
    let maxRequestBodySize: Int

    init(maxConcurrentStreams: UInt32, maxRequestBodySize: Int) throws {
        self.maxRequestBodySize = maxRequestBodySize
        try super.init(server: true) { _ in }
        guard let session else { return }
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maxConcurrentStreams)
        let rv = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
        guard rv == 0 else {
            throw HTTP2Error(code: .internalError, message: "nghttp2 refused our SETTINGS: \(libraryText(rv))")
        }
    }

    func respond(stream id: Int32, status: Int, headers: [HTTP2Header], body: [UInt8]) throws {
        let session = try requireSession()
        guard let stream = streams[id], !stream.responded else {
            throw HTTP2Error(code: .noSuchStream, message: "stream \(id) is closed or already answered; drop this response")
        }
        var fields = [HTTP2Header(name: ":status", value: String(status))]
        fields.reserveCapacity(1 + headers.count)
        for header in headers {
            let name = header.name.lowercased()
            if name.hasPrefix(":") {
                throw HTTP2Error(code: .invalidHeader, message: "pseudo-header \(name) is set by the session; pass status as an argument")
            }
            fields.append(HTTP2Header(name: name, value: header.value, neverIndex: header.neverIndex))
        }
        let rv = try withPackedHeaders(fields) { nva, count in
            withDataProvider(hasBody: !body.isEmpty) { provider in
                nghttp2_submit_response(session, id, nva, count, provider)
            }
        }
        guard rv == 0 else {
            throw HTTP2Error(code: .internalError, message: "nghttp2 refused the response on stream \(id): \(libraryText(rv))")
        }
        stream.responded = true
        if !body.isEmpty { outgoing[id] = OutgoingBody(body) }
    }

    func terminate(errorCode: UInt32) {
        for id in streams.keys.sorted() {
            streams[id] = nil
            events.append(.closed(id, errorCode))
        }
        destroy()
    }

    /// Watches the client's frame headers for the one stream-id error nghttp2 lets pass.
    private var streamIDs = ClientStreamIDs()

    override func receive(_ bytes: UnsafeRawBufferPointer) throws {
        guard let violation = streamIDs.scan(bytes) else { return try super.receive(bytes) }
        // What came before the offending frame is processed; the frame and the rest never are.
        if violation.offset > 0 { try super.receive(UnsafeRawBufferPointer(rebasing: bytes[..<violation.offset])) }
        let session = try requireSession()
        lastLibraryMessage = violation.message
        _ = nghttp2_session_terminate_session(session, HTTP2ErrorCode.protocolError)
        try settle()
    }

    // MARK: Hooks

    override func onBeginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
            streams[frame.pointee.hd.stream_id] = ServerStream()
        }
        return 0
    }

    override func onHeader(_ frame: UnsafePointer<nghttp2_frame>, name: String, value: String) -> Int32 {
        guard let stream = streams[frame.pointee.hd.stream_id] else { return 0 }
        switch name {
        case ":method": stream.request.method = value
        case ":path": stream.request.path = value
        case ":authority": stream.request.authority = value
        case ":scheme": stream.request.scheme = value
        default:
            if !name.hasPrefix(":") { stream.request.headers.append(HTTP2Header(name: name, value: value)) }
        }
        return 0
    }

    override func onDataChunk(stream id: Int32, _ data: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard let stream = streams[id], !stream.discarded else { return 0 }
        if stream.request.body.count + data.count > maxRequestBodySize {
            stream.discarded = true
            stream.request.body = []
            if let session {
                _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, HTTP2ErrorCode.cancel)
            }
            return 0
        }
        stream.request.body.append(contentsOf: data)
        return 0
    }

    override func onFrameRecv(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        _ = super.onFrameRecv(frame)
        let header = frame.pointee.hd
        switch UInt32(header.type) {
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            guard header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
                  let stream = streams[header.stream_id], !stream.discarded else { break }
            events.append(.request(stream.request, header.stream_id))
            stream.request.body = []  // the delegate has its copy
        case NGHTTP2_GOAWAY.rawValue:
            let goaway = frame.pointee.goaway
            events.append(.goAway(goaway.last_stream_id, goaway.error_code,
                                  bytesOf(goaway.opaque_data, goaway.opaque_data_len).array))
        default:
            break
        }
        return 0
    }

    override func onStreamClose(stream id: Int32, errorCode: UInt32) -> Int32 {
        _ = super.onStreamClose(stream: id, errorCode: errorCode)
        if streams.removeValue(forKey: id) != nil {
            events.append(.closed(id, errorCode))
        }
        return 0
    }
}

/// The client's frame boundaries, followed byte by byte without buffering, to catch a HEADERS or
/// DATA frame on a stream id the client jumped over. Such a stream is closed for good (RFC 9113
/// §5.1.1), so the frame is a connection error; nghttp2 ignores it instead, because it forgets
/// closed streams and cannot tell them from streams that closed while the client still sent.
struct ClientStreamIDs {
    struct Violation: Equatable {
        /// Where the offending frame starts in the bytes scanned (0 if it began in earlier bytes).
        var offset: Int
        var message: String
    }

    private var prefaceLeft = 24
    private var header: [UInt8] = []
    private var headerStart = 0
    private var payloadLeft = 0
    private(set) var highestOpened: Int32 = 0
    /// Ranges of ids jumped over. Bounded: the oldest are forgotten first, which only makes the
    /// check more lenient.
    private(set) var skipped: [ClosedRange<Int32>] = []
    static let maxSkippedRanges = 64

    /// Follows `bytes`; returns the first frame that breaks the rule, if any.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Violation? {
        headerStart = 0  // a header begun in earlier bytes starts, for these, at 0
        var i = 0
        while i < bytes.count {
            if prefaceLeft > 0 {
                let n = min(prefaceLeft, bytes.count - i)
                prefaceLeft -= n
                i += n
            } else if payloadLeft > 0 {
                let n = min(payloadLeft, bytes.count - i)
                payloadLeft -= n
                i += n
            } else {
                if header.isEmpty { headerStart = i }
                header.append(bytes[i])
                i += 1
                guard header.count == 9 else { continue }
                payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                let type = header[3]
                let id = Int32(bitPattern: (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7fff_ffff)
                header.removeAll(keepingCapacity: true)
                if let message = judge(type: type, stream: id) {
                    return Violation(offset: headerStart, message: message)
                }
            }
        }
        return nil
    }

    private mutating func judge(type: UInt8, stream id: Int32) -> String? {
        let isHeaders = type == UInt8(NGHTTP2_HEADERS.rawValue)
        guard isHeaders || type == UInt8(NGHTTP2_DATA.rawValue), id & 1 == 1 else { return nil }
        if id > highestOpened {
            // DATA above every opened stream is on an idle stream: nghttp2 refuses that itself.
            guard isHeaders else { return nil }
            if id > highestOpened + 2 {
                skipped.append((highestOpened + 1)...(id - 1))
                if skipped.count > Self.maxSkippedRanges { skipped.removeFirst() }
            }
            highestOpened = id
            return nil
        }
        guard skipped.contains(where: { $0.contains(id) }) else { return nil }
        return "\(isHeaders ? "HEADERS" : "DATA") on stream \(id), below stream \(highestOpened) and never opened"
    }
}
