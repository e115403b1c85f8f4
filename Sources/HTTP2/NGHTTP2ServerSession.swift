internal import CNghttp2

final class ServerStream {
    var request = HTTP2Request(method: "", path: "", authority: "", scheme: "", headers: [], body: [])
    var discarded = false
    var responded = false
}

final class NGHTTP2ServerSession: NGHTTP2Session {
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

    override func onHeader(_ frame: UnsafePointer<nghttp2_frame>, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard let stream = streams[frame.pointee.hd.stream_id] else { return 0 }
        let name = String(decoding: name, as: UTF8.self), value = String(decoding: value, as: UTF8.self)
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
