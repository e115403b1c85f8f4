// The parser's input buffer: where bytes wait, how lines are found in them, and how body bytes
// are taken. Pure Swift, no Foundation: the fuzz build compiles it with the parser.

extension HTTPParser {

    /// Drops consumed bytes: all of them when everything was read (the common case; the
    /// buffer is freed, since a connection between requests should hold nothing and one
    /// allocation per request is cheap), otherwise once they are the larger part, so the copy
    /// stays amortised O(1) per byte.
    mutating func compact() {
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

    mutating func consumeLine(_ range: Range<Int>) {
        readIndex = range.upperBound + 2
        scanIndex = readIndex
    }

    mutating func takeBody() {
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
    mutating func appendBody(_ bytes: UnsafeRawBufferPointer) {
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
    mutating func scanLine(_ kind: LineKind) -> Scan {
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
}
