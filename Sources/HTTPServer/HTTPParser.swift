// The HTTP/1.1 request parser: bytes in, in any split; requests out. No I/O.
// Pure Swift, no Foundation: the fuzz build compiles the parser's files without the rest of
// the module (the Makefile's FUZZ_SOURCES).

/// What the parser has for the connection.
package enum HTTPParserEvent: Sendable, Equatable {
    /// A complete request, body included.
    case request(HTTPRequest)
    /// The client sent `Expect: 100-continue` and waits: write `HTTPResponse.continueHead`.
    /// Only produced when none of the body has arrived yet.
    case expectContinue
    /// The bytes are not HTTP/1.1 the relay accepts. Answer `status` with `reason`, then
    /// close: after an error the framing is unknown, so nothing more is parsed.
    case error(HTTPParseError)
}

/// An incremental HTTP/1.1 request parser.
///
/// Strict on purpose: every ambiguity a proxy and the relay could read differently
/// (bare LF, obs-fold, both Content-Length and Transfer-Encoding, differing
/// Content-Lengths, a second Host) is an error, because request smuggling lives in
/// such disagreements. Decisions:
/// - line endings must be CRLF; a bare LF or bare CR is 400. Empty lines before a request
///   line are skipped (RFC 9112 §2.2), bounded by the request-line limit;
/// - `HTTP/1.0` and `HTTP/1.1` are served (`HTTP/1.2`…`1.9` as 1.1, RFC 9110 §6.2);
///   another well-formed `HTTP/x.y` is 505; the HTTP/2 preface and a TLS ClientHello are 400
///   with a reason that names the mistake;
/// - a transfer coding other than `chunked` is 501, `chunked` not last or repeated is 400;
///   Transfer-Encoding in an HTTP/1.0 request is 400 (RFC 9112 §6.1);
/// - `Expect` other than `100-continue` is 417; a missing `Host` is tolerated, a repeated one is 400.
///
/// Errors depend only on the bytes, never on how they were split: limits are checked at the
/// byte that crosses them. Only `.expectContinue` depends on the split (it is skipped when
/// the body has already arrived).
///
/// Memory follows what arrived, never what a head declares: a `Content-Length` reserves
/// nothing, the body grows (doubling, capped at the declared length) with the bytes that came,
/// and body bytes that arrive after the head go straight into the body, so they are held once;
/// a body that arrived whole with its head (and nothing after it) takes over the input buffer.
/// The input buffer is freed as soon as all of it is consumed, so a connection between
/// requests holds nothing.
///
/// Use: `append` what the socket read, then call `next()` until it returns nil (needs more
/// bytes), or use `feed`, which does both. The parser holds unconsumed bytes; a server that
/// stops calling `next()` (e.g. while a pipelined request is served) should stop reading
/// once `bufferedByteCount` is large; `heldByteCount` is its whole footprint.
package struct HTTPParser: Sendable {
    enum State: Sendable {
        case requestLine
        case headers
        case body
        case chunkSize
        case chunkData
        case chunkDataEnd
        case trailers
        case failed
    }

    enum LineKind {
        case requestLine, field, chunkSize
    }

    enum Scan {
        case needMore
        case line(Range<Int>)
        case fail(HTTPParseError)
    }

    /// The caps this parser enforces.
    package let limits: HTTPParserLimits
    /// Stamped on every request, so handlers see the peer without the server copying it.
    package var peerAddress: String?

    var buffer: [UInt8] = []
    /// Start of unconsumed bytes in `buffer` (also the start of the line being scanned).
    var readIndex = 0
    /// Where the line scan resumes, so bytes fed one at a time are each examined once.
    var scanIndex = 0
    var state: State = .requestLine

    // The request being assembled.
    var sawSpaceInRequestLine = false
    var skippedEmptyLineBytes = 0
    var method = ""
    var target = ""
    var version: HTTPVersion = .http11
    var headers = HTTPHeaders()
    var headerBytes = 0
    var trailerBytes = 0
    var keepAlive = true
    var body: [UInt8] = []
    var remaining = 0

    /// Longest chunk-size line (size plus ignored extensions).
    static let maxChunkLineBytes = 4096
    /// The first allocation for a body; it then doubles with what arrives.
    static let firstBodyCapacity = 1024
    /// The most the first field reserves for the head's fields; a larger head grows from there.
    static let firstHeadCapacity = 1024

    package init(limits: HTTPParserLimits = HTTPParserLimits(), peerAddress: String? = nil) {
        self.limits = limits
        self.peerAddress = peerAddress
    }

    /// Bytes received but not yet consumed; the server's back-pressure signal.
    package var bufferedByteCount: Int { buffer.count - readIndex }

    /// Bytes of memory this parser holds for the connection (input buffer, fields and body so far,
    /// by capacity): what a server's budget for half-received requests counts.
    package var heldByteCount: Int { buffer.capacity + body.capacity + headers.byteCapacity }

    /// True once an error was produced: the connection must answer it and close.
    package var hasFailed: Bool {
        if case .failed = state { return true }
        return false
    }

    /// True when no request is partly received: a close or idle timeout now loses nothing,
    /// while one mid-request deserves a 408.
    package var isIdle: Bool {
        if case .requestLine = state { return bufferedByteCount == 0 }
        return false
    }

    /// True once the head is in and the body (or its chunks and trailers) is arriving: a
    /// stall here is judged by the body timeout, not the header one.
    package var isReceivingBody: Bool {
        switch state {
        case .body, .chunkSize, .chunkData, .chunkDataEnd, .trailers: return true
        case .requestLine, .headers, .failed: return false
        }
    }

    /// Adds bytes read from the connection; ignored after an error. Body bytes that follow
    /// bytes already parsed go straight into the body instead of through the input buffer.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if hasFailed || bytes.isEmpty { return }
        compact()
        var rest = bytes
        if readIndex == buffer.count, remaining > 0, isTakingBodyBytes {
            let take = min(remaining, rest.count)
            appendBody(UnsafeRawBufferPointer(rebasing: rest[0..<take]))
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
        }
        if !rest.isEmpty { buffer.append(contentsOf: rest) }
    }

    var isTakingBodyBytes: Bool {
        switch state {
        case .body, .chunkData: return true
        default: return false
        }
    }

    /// Adds bytes read from the connection; ignored after an error.
    package mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// `append` then every event the bytes complete, in order.
    package mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [HTTPParserEvent] {
        append(bytes)
        var events: [HTTPParserEvent] = []
        while let event = next() { events.append(event) }
        return events
    }

    /// `append` then every event the bytes complete, in order.
    package mutating func feed(_ bytes: [UInt8]) -> [HTTPParserEvent] {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// The next event the buffered bytes complete, or nil when more bytes are needed
    /// (or after an error).
    package mutating func next() -> HTTPParserEvent? {
        while true {
            switch state {
            case .failed:
                return nil

            case .requestLine:
                switch scanLine(.requestLine) {
                case .needMore:
                    return nil
                case .fail(let error):
                    return fail(error)
                case .line(let range):
                    consumeLine(range)
                    if range.isEmpty {
                        skippedEmptyLineBytes += 2
                        if skippedEmptyLineBytes > limits.maxRequestLineBytes {
                            return fail(414, "too many empty lines before the request line")
                        }
                        continue
                    }
                    if let error = parseRequestLine(range) { return fail(error) }
                    state = .headers
                }

            case .headers:
                switch scanLine(.field) {
                case .needMore:
                    return nil
                case .fail(let error):
                    return fail(error)
                case .line(let range):
                    consumeLine(range)
                    if range.isEmpty {
                        if let event = headComplete() { return event }
                        continue
                    }
                    if let error = parseField(range, isTrailer: false) { return fail(error) }
                }

            case .body:
                takeBody()
                if remaining > 0 { return nil }
                return emitRequest()

            case .chunkSize:
                switch scanLine(.chunkSize) {
                case .needMore:
                    return nil
                case .fail(let error):
                    return fail(error)
                case .line(let range):
                    consumeLine(range)
                    if let error = parseChunkSize(range) { return fail(error) }
                }

            case .chunkData:
                takeBody()
                if remaining > 0 { return nil }
                state = .chunkDataEnd

            case .chunkDataEnd:
                let available = buffer.count - readIndex
                if available >= 1 && buffer[readIndex] != 0x0D {
                    return fail(400, "chunk data longer than its size; check the chunk sizes")
                }
                if available >= 2 && buffer[readIndex + 1] != 0x0A {
                    return fail(400, "chunk data not followed by CRLF")
                }
                if available < 2 { return nil }
                readIndex += 2
                scanIndex = readIndex
                state = .chunkSize

            case .trailers:
                switch scanLine(.field) {
                case .needMore:
                    return nil
                case .fail(let error):
                    return fail(error)
                case .line(let range):
                    consumeLine(range)
                    if range.isEmpty { return emitRequest() }
                    if let error = parseField(range, isTrailer: true) { return fail(error) }
                }
            }
        }
    }
}
