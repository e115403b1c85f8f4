// The parser's reading of a request head (request line, fields, framing) and of chunk sizes,
// and the events it ends with. Pure Swift, no Foundation: the fuzz build compiles it with the parser.

extension HTTPParser {

    mutating func parseRequestLine(_ range: Range<Int>) -> HTTPParseError? {
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

    mutating func parseField(_ range: Range<Int>, isTrailer: Bool) -> HTTPParseError? {
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
    mutating func headComplete() -> HTTPParserEvent? {
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
    func readContentLength(_ field: UnsafeRawBufferPointer, into value: inout Int?) -> String? {
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

    mutating func parseChunkSize(_ range: Range<Int>) -> HTTPParseError? {
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

    mutating func emitRequest() -> HTTPParserEvent {
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

    mutating func fail(_ error: HTTPParseError) -> HTTPParserEvent {
        state = .failed
        buffer = []
        body = []
        headers = HTTPHeaders()
        readIndex = 0
        scanIndex = 0
        return .error(error)
    }

    mutating func fail(_ status: Int, _ reason: String) -> HTTPParserEvent {
        fail(HTTPParseError(status: status, reason: reason))
    }
}
