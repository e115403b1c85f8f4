// The HTTP/1.1 request parser: bytes in, in any split; requests out. No I/O.
// Pure Swift, no Foundation: the fuzz build compiles this file on its own.

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
    private enum State: Sendable {
        case requestLine
        case headers
        case body
        case chunkSize
        case chunkData
        case chunkDataEnd
        case trailers
        case failed
    }

    private enum LineKind {
        case requestLine, field, chunkSize
    }

    private enum Scan {
        case needMore
        case line(Range<Int>)
        case fail(HTTPParseError)
    }

    /// The caps this parser enforces.
    package let limits: HTTPParserLimits
    /// Stamped on every request, so handlers see the peer without the server copying it.
    package var peerAddress: String?

    private var buffer: [UInt8] = []
    /// Start of unconsumed bytes in `buffer` (also the start of the line being scanned).
    private var readIndex = 0
    /// Where the line scan resumes, so bytes fed one at a time are each examined once.
    private var scanIndex = 0
    private var state: State = .requestLine

    // The request being assembled.
    private var sawSpaceInRequestLine = false
    private var skippedEmptyLineBytes = 0
    private var method = ""
    private var target = ""
    private var version: HTTPVersion = .http11
    private var headers = HTTPHeaders()
    private var headerBytes = 0
    private var trailerBytes = 0
    private var keepAlive = true
    private var body: [UInt8] = []
    private var remaining = 0

    /// Longest chunk-size line (size plus ignored extensions).
    private static let maxChunkLineBytes = 4096
    /// The first allocation for a body; it then doubles with what arrives.
    private static let firstBodyCapacity = 1024
    /// The most the first field reserves for the head's fields; a larger head grows from there.
    private static let firstHeadCapacity = 1024

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

    private var isTakingBodyBytes: Bool {
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

    // MARK: - buffer

    /// Drops consumed bytes: all of them when everything was read (the common case; the
    /// buffer is freed, since a connection between requests should hold nothing and one
    /// allocation per request is cheap), otherwise once they are the larger part, so the copy
    /// stays amortised O(1) per byte.
    private mutating func compact() {
        if readIndex == buffer.count {
            if buffer.capacity > 0 { buffer = [] }
            readIndex = 0
            scanIndex = 0
            return
        }
        guard readIndex > 0 else { return }
        if readIndex >= 4096 || readIndex * 2 >= buffer.count {
            buffer.removeSubrange(0..<readIndex)
        } else {
            return
        }
        scanIndex -= readIndex
        readIndex = 0
    }

    private mutating func consumeLine(_ range: Range<Int>) {
        readIndex = range.upperBound + 2
        scanIndex = readIndex
    }

    private mutating func takeBody() {
        // The whole body and nothing after it is in the input buffer (the request came in one
        // read, as a push does): the buffer becomes the body, its head moved out of the way,
        // instead of a second array the body is copied into.
        if case .body = state, body.isEmpty, remaining > 0, buffer.count - readIndex == remaining {
            buffer.removeSubrange(0..<readIndex)
            swap(&body, &buffer)
            readIndex = 0
            scanIndex = 0
            remaining = 0
            return
        }
        let take = min(remaining, buffer.count - readIndex)
        if take > 0 {
            let start = readIndex
            buffer.withUnsafeBytes { appendBody(UnsafeRawBufferPointer(rebasing: $0[start..<(start + take)])) }
            readIndex += take
            scanIndex = readIndex
        }
        compact()
    }

    /// Adds body bytes, growing the body to twice what arrived but never past what the current
    /// framing can still bring (the declared length, or the body limit for chunks): capacity
    /// stays within twice what arrived, and a body that comes in one or two reads is allocated
    /// once.
    private mutating func appendBody(_ bytes: UnsafeRawBufferPointer) {
        let needed = body.count + bytes.count
        if needed > body.capacity {
            let ceiling: Int
            if case .body = state { ceiling = body.count + remaining } else { ceiling = limits.maxBodyBytes }
            let grown = min(max(needed * 2, HTTPParser.firstBodyCapacity), ceiling)
            body.reserveCapacity(max(needed, grown))
        }
        body.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
        remaining -= bytes.count
    }

    /// Finds the next CRLF-terminated line from `readIndex`, checking every byte once as
    /// it goes (control bytes, bare CR/LF, the length limit) so garbage fails at once
    /// instead of after the limit's worth of bytes.
    private mutating func scanLine(_ kind: LineKind) -> Scan {
        let start = readIndex
        var i = scanIndex
        let limit: Int
        let isTrailer: Bool
        if case .trailers = state { isTrailer = true } else { isTrailer = false }
        switch kind {
        case .requestLine: limit = limits.maxRequestLineBytes
        case .field: limit = limits.maxHeaderBytes - (isTrailer ? trailerBytes : headerBytes)
        case .chunkSize: limit = HTTPParser.maxChunkLineBytes
        }
        // Built only when a line is too long: formatting it for every line cost more than the scan.
        let maxHeaderBytes = limits.maxHeaderBytes
        func tooLong() -> HTTPParseError {
            switch kind {
            case .requestLine:
                return HTTPParseError(status: 414, reason: "request line longer than \(limit) bytes; shorten the URL")
            case .field:
                return HTTPParseError(status: 431, reason: "\(isTrailer ? "trailers" : "headers") larger than \(maxHeaderBytes) bytes")
            case .chunkSize:
                return HTTPParseError(status: 400, reason: "chunk size line longer than \(limit) bytes")
            }
        }
        var sawSpace = sawSpaceInRequestLine
        // Bytes below this index are within the line's limit.
        let withinLimit = start &+ limit
        let result: Scan = buffer.withUnsafeBufferPointer { p in
            let n = p.count
            while i < n {
                // The common bytes first, in a tight loop: printable ones inside the limit pass
                // every check below (a field's or chunk line's, or a request line's after its
                // method), so only CR, LF, tab, control bytes and the method go the long way.
                if kind != .requestLine || sawSpace {
                    let stop = min(n, withinLimit)
                    // Eight at a time while all eight are printable ASCII, then byte by byte.
                    while i &+ 8 <= stop, allPrintableASCII(p, at: i) { i &+= 8 }
                    while i < stop {
                        let b = p[i]
                        if b < 0x20 || b >= 0x7F { break }
                        i &+= 1
                    }
                    if i == n { break }
                }
                let b = p[i]
                if b == 0x0A {
                    if i == start || p[i - 1] != 0x0D {
                        return .fail(HTTPParseError(status: 400, reason: "bare LF; end lines with CRLF"))
                    }
                    return .line(start..<(i - 1))
                }
                if b == 0x0D {
                    if i + 1 >= n { return .needMore }  // resume at the CR when more arrives
                    if p[i + 1] != 0x0A {
                        return .fail(HTTPParseError(status: 400, reason: "bare CR; end lines with CRLF"))
                    }
                    i += 1
                    continue
                }
                if i - start + 1 > limit { return .fail(tooLong()) }
                switch kind {
                case .requestLine:
                    if b == 0x20 {
                        sawSpace = true
                    } else if b < 0x20 || b >= 0x7F {
                        if i == start && b == 0x16 {
                            return .fail(HTTPParseError(status: 400, reason: "TLS handshake on a plain HTTP port; use http://"))
                        }
                        return .fail(HTTPParseError(status: 400, reason: "invalid byte 0x\(hex(b)) in the request line"))
                    } else if !sawSpace && !isTokenChar(b) {
                        return .fail(HTTPParseError(status: 400, reason: "invalid character in the method"))
                    }
                case .field, .chunkSize:
                    if (b < 0x20 && b != 0x09) || b == 0x7F {
                        let what = b == 0 ? "NUL byte" : "control byte 0x\(hex(b))"
                        let place = kind == .chunkSize ? "a chunk size line" : "a header"
                        return .fail(HTTPParseError(status: 400, reason: "\(what) in \(place)"))
                    }
                }
                i += 1
            }
            return .needMore
        }
        scanIndex = i
        sawSpaceInRequestLine = sawSpace
        return result
    }

    // MARK: - head

    private mutating func parseRequestLine(_ range: Range<Int>) -> HTTPParseError? {
        sawSpaceInRequestLine = false
        skippedEmptyLineBytes = 0
        let malformed = HTTPParseError(status: 400, reason: "malformed request line; expected METHOD SP target SP HTTP/1.1")
        return buffer.withUnsafeBufferPointer { p -> HTTPParseError? in
            guard let sp1 = firstIndex(of: 0x20, in: p, range) else { return malformed }
            guard let sp2 = firstIndex(of: 0x20, in: p, (sp1 + 1)..<range.upperBound) else { return malformed }
            if firstIndex(of: 0x20, in: p, (sp2 + 1)..<range.upperBound) != nil { return malformed }
            if sp1 == range.lowerBound || sp2 == sp1 + 1 || sp2 + 1 == range.upperBound { return malformed }
            let versionRange = (sp2 + 1)..<range.upperBound
            // "HTTP/d.d"
            guard versionRange.count == 8, p[sp2 + 1] == 0x48, p[sp2 + 2] == 0x54, p[sp2 + 3] == 0x54,
                p[sp2 + 4] == 0x50, p[sp2 + 5] == 0x2F, p[sp2 + 7] == 0x2E,
                isDigit(p[sp2 + 6]), isDigit(p[sp2 + 8])
            else {
                return HTTPParseError(status: 400, reason: "malformed HTTP version; expected HTTP/1.1")
            }
            let major = p[sp2 + 6] - 0x30, minor = p[sp2 + 8] - 0x30
            if major == 2 && minor == 0 && string(p, range.lowerBound..<sp1) == "PRI" {
                return HTTPParseError(status: 400, reason: "HTTP/2 connection preface; this port speaks HTTP/1.1 only")
            }
            guard major == 1 else {
                return HTTPParseError(status: 505, reason: "HTTP/\(major).\(minor) not supported; use HTTP/1.1")
            }
            version = minor == 0 ? .http10 : .http11
            method = string(p, range.lowerBound..<sp1)
            target = string(p, (sp1 + 1)..<sp2)
            return nil
        }
    }

    private mutating func parseField(_ range: Range<Int>, isTrailer: Bool) -> HTTPParseError? {
        let place = isTrailer ? "trailer" : "header"
        // The field's bytes go straight from the input buffer into the headers' one buffer: no
        // String is made for a name or a value until someone asks for one.
        let parsed: Result<(name: Range<Int>, value: Range<Int>), HTTPParseError> = buffer.withUnsafeBufferPointer { p in
            if isOWS(p[range.lowerBound]) {
                return .failure(HTTPParseError(status: 400, reason: "obsolete line folding in a \(place); send each field on one line"))
            }
            // The colon and the name's characters in one walk; the faults are reported in the
            // order they are checked: no colon, an empty name, a character outside tchar.
            var colon = -1
            var nameIsToken = true
            var i = range.lowerBound
            while i < range.upperBound {
                let b = p[i]
                if b == UInt8(ascii: ":") {
                    colon = i
                    break
                }
                nameIsToken = nameIsToken && isTokenChar(b)
                i &+= 1
            }
            if colon < 0 {
                return .failure(HTTPParseError(status: 400, reason: "\(place) line without a colon"))
            }
            if colon == range.lowerBound {
                return .failure(HTTPParseError(status: 400, reason: "empty \(place) name"))
            }
            if !nameIsToken {
                return .failure(HTTPParseError(status: 400, reason: "invalid character in a \(place) name"))
            }
            var vs = colon + 1, ve = range.upperBound
            while vs < ve && isOWS(p[vs]) { vs += 1 }
            while ve > vs && isOWS(p[ve - 1]) { ve -= 1 }
            return .success((name: range.lowerBound..<colon, value: vs..<ve))
        }
        switch parsed {
        case .failure(let error):
            return error
        case .success(let field):
            if isTrailer {
                trailerBytes += range.count
                return nil
            }
            headerBytes += range.count
            if headers.count >= limits.maxHeaderCount {
                return HTTPParseError(status: 431, reason: "more than \(limits.maxHeaderCount) header fields")
            }
            // Room for the head at once, rather than a copy at each doubling: what is buffered
            // from this line on (a usual head arrives whole), within a usual head's size.
            if headers.isEmpty { headers.reserveBytes(min(buffer.count - range.lowerBound + 64, HTTPParser.firstHeadCapacity)) }
            buffer.withUnsafeBytes { p in
                headers.add(name: UnsafeRawBufferPointer(rebasing: p[field.name]),
                            value: UnsafeRawBufferPointer(rebasing: p[field.value]))
            }
            return nil
        }
    }

    /// Decides the body framing once the head is in, and whether the client waits for 100.
    private mutating func headComplete() -> HTTPParserEvent? {
        // The fields that decide the framing, found in one pass over the head (five lookups of
        // every field by name cost more than the rest of the decision). Content-Length is read
        // as it is found; its first error is kept and reported below, where the order of the
        // checks says, so the answer is the same as when each field was looked up in turn.
        var hostCount = 0
        var connectionValues: [String] = []
        var transferEncodings: [String] = []
        var expectations: [String] = []
        var contentLengthCount = 0
        var contentLength: Int?
        var contentLengthError: String?
        // Over the fields' bytes: only the rare list fields (Connection, Expect, Transfer-Encoding)
        // become Strings, to be split and named in a reason.
        headers.withFieldBytes { fields in
            fields.forEach { name, value in
                switch name.count {
                case 4 where asciiCaseInsensitiveEquals(name, literal: "Host"):
                    hostCount += 1
                case 6 where asciiCaseInsensitiveEquals(name, literal: "Expect"):
                    expectations.append(String(decoding: value, as: UTF8.self))
                case 10 where asciiCaseInsensitiveEquals(name, literal: "Connection"):
                    connectionValues.append(String(decoding: value, as: UTF8.self))
                case 14 where asciiCaseInsensitiveEquals(name, literal: "Content-Length"):
                    contentLengthCount += 1
                    if contentLengthError == nil {
                        contentLengthError = readContentLength(value, into: &contentLength)
                    }
                case 17 where asciiCaseInsensitiveEquals(name, literal: "Transfer-Encoding"):
                    transferEncodings.append(String(decoding: value, as: UTF8.self))
                default:
                    break
                }
            }
        }
        if hostCount > 1 {
            return fail(400, "more than one Host header")
        }
        let connection = listElements(connectionValues)
        let close = connection.contains { asciiCaseInsensitiveEquals(String($0), "close") }
        if version == .http11 {
            keepAlive = !close
        } else {
            keepAlive = !close && connection.contains { asciiCaseInsensitiveEquals(String($0), "keep-alive") }
        }

        var chunked = false
        var length = 0
        if !transferEncodings.isEmpty {
            if version == .http10 {
                return fail(400, "Transfer-Encoding in an HTTP/1.0 request; send Content-Length")
            }
            if contentLengthCount > 0 {
                return fail(400, "both Content-Length and Transfer-Encoding; send only one")
            }
            let codings = listElements(transferEncodings)
            let chunkedCount = codings.filter { asciiCaseInsensitiveEquals(String($0), "chunked") }.count
            guard let last = codings.last else {
                return fail(400, "empty Transfer-Encoding")
            }
            if !asciiCaseInsensitiveEquals(String(last), "chunked") {
                if chunkedCount > 0 { return fail(400, "chunked must be the last transfer coding") }
                return fail(501, "transfer coding \(last) not supported; send chunked or Content-Length")
            }
            if chunkedCount > 1 { return fail(400, "chunked applied more than once") }
            if codings.count > 1 {
                return fail(501, "transfer coding \(codings[0]) not supported; send chunked or Content-Length")
            }
            chunked = true
        } else if contentLengthCount > 0 {
            if let contentLengthError { return fail(400, contentLengthError) }
            length = contentLength ?? 0
            if length > limits.maxBodyBytes {
                return fail(413, "body of \(length) bytes is over the \(limits.maxBodyBytes)-byte limit")
            }
        }

        var expectsContinue = false
        if version == .http11 && !expectations.isEmpty {  // RFC 9110 §10.1.1: ignored in 1.0
            let elements = listElements(expectations)
            for expectation in elements where !asciiCaseInsensitiveEquals(String(expectation), "100-continue") {
                return fail(417, "unsupported Expect: \(expectation)")
            }
            expectsContinue = !elements.isEmpty
        }

        let bodyAbsent = readIndex == buffer.count
        if chunked {
            state = .chunkSize
        } else if length > 0 {
            state = .body
            remaining = length
        } else {
            return emitRequest()
        }
        return expectsContinue && bodyAbsent ? .expectContinue : nil
    }

    /// Reads one Content-Length field (a comma-separated list of equal decimals is allowed, as
    /// RFC 9110 §8.6 says) into `value`, which holds what earlier fields said; returns why it
    /// is refused, or nil.
    private func readContentLength(_ field: UnsafeRawBufferPointer, into value: inout Int?) -> String? {
        var start = 0
        while true {
            let end = field[start...].firstIndex(of: UInt8(ascii: ",")) ?? field.count
            var s = start, e = end
            while s < e && isOWS(field[s]) { s += 1 }
            while e > s && isOWS(field[e - 1]) { e -= 1 }
            guard let n = parseDecimal(UnsafeRawBufferPointer(rebasing: field[s..<e])) else {
                return "invalid Content-Length; send a decimal byte count"
            }
            if let v = value, v != n { return "conflicting Content-Length values" }
            value = n
            if end == field.count { return nil }
            start = end + 1
        }
    }

    private mutating func parseChunkSize(_ range: Range<Int>) -> HTTPParseError? {
        let parsed: Int? = buffer.withUnsafeBufferPointer { p -> Int? in
            var i = range.lowerBound
            var size = 0
            while i < range.upperBound, let digit = hexValue(p[i]) {
                let (shifted, o1) = size.multipliedReportingOverflow(by: 16)
                let (sum, o2) = shifted.addingReportingOverflow(digit)
                if o1 || o2 { return -1 }
                size = sum
                i += 1
            }
            if i == range.lowerBound { return nil }
            while i < range.upperBound && isOWS(p[i]) { i += 1 }
            if i < range.upperBound && p[i] != UInt8(ascii: ";") { return nil }
            return size  // extensions after ';' are ignored
        }
        guard let size = parsed else {
            return HTTPParseError(status: 400, reason: "malformed chunk size; expected hex digits")
        }
        if size < 0 {
            return HTTPParseError(status: 400, reason: "chunk size overflows")
        }
        if size == 0 {
            state = .trailers
            return nil
        }
        if size > limits.maxBodyBytes - body.count {
            return HTTPParseError(status: 413, reason: "chunked body over the \(limits.maxBodyBytes)-byte limit")
        }
        remaining = size
        state = .chunkData
        return nil
    }

    // MARK: - results

    private mutating func emitRequest() -> HTTPParserEvent {
        let request = HTTPRequest(
            method: method, target: target, version: version, headers: headers, body: body,
            keepAlive: keepAlive, peerAddress: peerAddress)
        method = ""
        target = ""
        headers = HTTPHeaders()
        body = []
        headerBytes = 0
        trailerBytes = 0
        remaining = 0
        state = .requestLine
        compact()
        return .request(request)
    }

    private mutating func fail(_ error: HTTPParseError) -> HTTPParserEvent {
        state = .failed
        buffer = []
        body = []
        headers = HTTPHeaders()
        readIndex = 0
        scanIndex = 0
        return .error(error)
    }

    private mutating func fail(_ status: Int, _ reason: String) -> HTTPParserEvent {
        fail(HTTPParseError(status: status, reason: reason))
    }
}

// MARK: - byte helpers

/// True when the 8 bytes at `i` are all in 0x20...0x7E, the bytes the line scan passes without
/// a closer look (a high bit, a control byte or a 0x7F anywhere makes it false).
@inline(__always)
private func allPrintableASCII(_ p: UnsafeBufferPointer<UInt8>, at i: Int) -> Bool {
    let w = UnsafeRawPointer(p.baseAddress! + i).loadUnaligned(as: UInt64.self)
    return (controlOrDELBytes(w) | (w & 0x8080_8080_8080_8080)) == 0
}

/// The high bit of every byte of `w` below 0x20 or equal to 0x7F, for the parser's line scan
/// and the serializer's field check (SWAR: each test is exact for the word as a whole, a
/// borrow spreading only from a real hit, so zero means no such byte).
@inline(__always)
func controlOrDELBytes(_ w: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
    let below20 = (w &- ones &* 0x20) & ~w & highs
    let del = w ^ (ones &* 0x7F)
    return below20 | ((del &- ones) & ~del & highs)
}

@inline(__always)
private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

@inline(__always)
private func hexValue(_ b: UInt8) -> Int? {
    switch b {
    case 0x30...0x39: return Int(b - 0x30)
    case 0x41...0x46: return Int(b - 0x41 + 10)
    case 0x61...0x66: return Int(b - 0x61 + 10)
    default: return nil
    }
}

private func hex(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: [digits[Int(b >> 4)], digits[Int(b & 15)]], as: UTF8.self)
}

/// Where `byte` first is in `range`, eight bytes at a time (SWAR: a zero byte of `word ^ pattern`
/// is a match; the lowest flagged byte is exact, a borrow only spreading upwards from a real one),
/// then byte by byte: the request line's spaces are searched over the whole target.
func firstIndex(of byte: UInt8, in p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
    var i = range.lowerBound
    let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
    let pattern = ones &* UInt64(byte)
    while i &+ 8 <= range.upperBound {
        // Little-endian order, so the lowest bits are the first byte in memory.
        let w = UInt64(littleEndian: UnsafeRawPointer(p.baseAddress! + i).loadUnaligned(as: UInt64.self)) ^ pattern
        let found = (w &- ones) & ~w & highs
        if found != 0 { return i &+ found.trailingZeroBitCount >> 3 }
        i &+= 8
    }
    while i < range.upperBound {
        if p[i] == byte { return i }
        i += 1
    }
    return nil
}

private func string(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
    String(decoding: UnsafeBufferPointer(rebasing: p[range]), as: UTF8.self)
}

/// Digits only: no sign, no spaces inside, no overflow (a wrapped length smuggles a body).
private func parseDecimal(_ s: UnsafeRawBufferPointer) -> Int? {
    if s.isEmpty { return nil }
    var n = 0
    for b in s {
        guard isDigit(b) else { return nil }
        let (m, o1) = n.multipliedReportingOverflow(by: 10)
        let (a, o2) = m.addingReportingOverflow(Int(b - 0x30))
        if o1 || o2 { return nil }
        n = a
    }
    return n
}
