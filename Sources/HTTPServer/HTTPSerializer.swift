// Response serialization and the Date header. Pure Swift, no Foundation. The fuzz build
// compiles this file with the Basics files it needs beside it (see HTTPHeaders.swift).
#if !HTTPPARSER_FUZZ
internal import Basics
#endif

/// Serializes a response: status line, the response's headers, Content-Length, Date, and
/// `Connection: close` when `close` is set.
///
/// The serializer owns framing, so `Content-Length`, `Transfer-Encoding`, `Date` and
/// `Connection` in `response.headers` are ignored: a handler cannot desynchronise a kept
/// connection. 1xx, 204 and 304 responses carry neither Content-Length nor body (RFC 9110).
/// CR, LF and other control bytes in a header value become spaces, and a header whose name
/// is not a token is dropped, so no value can inject a header or split the response.
/// `date` is `httpDate(now)`, computed by the caller once per second.
package func serialize(_ response: HTTPResponse, date: String, close: Bool, into out: inout [UInt8]) {
    let status = min(max(response.status, 100), 999)
    let noBody = status < 200 || status == 204 || status == 304
    out.reserveCapacity(out.count + 128 + response.body.count)
    append("HTTP/1.1 ", to: &out)
    DecimalText.append(status, to: &out)
    out.append(0x20)
    StringBytes.with(reasonPhrase(status)) { out.append(contentsOf: $0) }
    appendCRLF(to: &out)
    response.headers.withFieldBytes { fields in
        fields.forEach { name, value in
            if name.isEmpty || !name.allSatisfy(isTokenChar) { return }
            if isFramingName(name) { return }
            // Typed buffers, and the two-byte separators a byte at a time: each array append of a
            // sequence costs more than a short copy, and the answer has several per header.
            out.append(contentsOf: name.assumingMemoryBound(to: UInt8.self))
            out.append(UInt8(ascii: ":"))
            out.append(0x20)
            // Whole when clean (the usual case: ids), else a byte at a time, control bytes as spaces.
            if isCleanFieldValue(value) {
                out.append(contentsOf: value.assumingMemoryBound(to: UInt8.self))
            } else {
                for b in value { out.append((b < 0x20 && b != 0x09) || b == 0x7F ? 0x20 : b) }
            }
            appendCRLF(to: &out)
        }
    }
    if !noBody {
        append("Content-Length: ", to: &out)
        DecimalText.append(response.body.count, to: &out)
        appendCRLF(to: &out)
    }
    append("Date: ", to: &out)
    StringBytes.with(date) { out.append(contentsOf: $0) }
    appendCRLF(to: &out)
    if close {
        append("Connection: close\r\n", to: &out)
    }
    appendCRLF(to: &out)
    if !noBody {
        out.append(contentsOf: response.body)
    }
}

/// True when no byte of `value` is one the serializer turns into a space (a control byte other
/// than tab, or DEL): eight bytes at a time (`controlOrDELBytes`, the parser's line-scan test),
/// and a word that may hold one, and the tail, byte by byte. The answer's ids are passed this way.
func isCleanFieldValue(_ value: UnsafeRawBufferPointer) -> Bool {
    @inline(__always) func isClean(_ b: UInt8) -> Bool { !((b < 0x20 && b != 0x09) || b == 0x7F) }
    var i = 0
    while i &+ 8 <= value.count {
        if controlOrDELBytes(value.loadUnaligned(fromByteOffset: i, as: UInt64.self)) != 0 {
            for k in i ..< i &+ 8 where !isClean(value[k]) { return false }
        }
        i &+= 8
    }
    while i < value.count {
        if !isClean(value[i]) { return false }
        i &+= 1
    }
    return true
}

/// The IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) for a Unix second. Computed without
/// Foundation or the C library so it is pure and testable; the caller caches it per second.
package func httpDate(_ unixSeconds: Int) -> String {
    let days = floorDiv(unixSeconds, 86400)
    let secondOfDay = unixSeconds - days * 86400
    let (year, month, day) = civilFromDays(days)
    let weekday = ((days % 7) + 7 + 4) % 7  // 1970-01-01 was a Thursday (index 4, Sunday = 0)
    var out: [UInt8] = []
    out.reserveCapacity(29)
    out.append(contentsOf: weekdayNames[weekday].utf8)
    out.append(contentsOf: ", ".utf8)
    appendTwoDigits(day, to: &out)
    out.append(0x20)
    out.append(contentsOf: monthNames[month - 1].utf8)
    out.append(0x20)
    DecimalText.append(year, to: &out, minDigits: 4)
    out.append(0x20)
    appendTwoDigits(secondOfDay / 3600, to: &out)
    out.append(UInt8(ascii: ":"))
    appendTwoDigits(secondOfDay / 60 % 60, to: &out)
    out.append(UInt8(ascii: ":"))
    appendTwoDigits(secondOfDay % 60, to: &out)
    out.append(contentsOf: " GMT".utf8)
    return String(decoding: out, as: UTF8.self)
}

/// The standard reason phrase, so logs and curl show a readable status line.
package func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 100: return "Continue"
    case 200: return "OK"
    case 201: return "Created"
    case 202: return "Accepted"
    case 204: return "No Content"
    case 301: return "Moved Permanently"
    case 302: return "Found"
    case 304: return "Not Modified"
    case 400: return "Bad Request"
    case 401: return "Unauthorized"
    case 403: return "Forbidden"
    case 404: return "Not Found"
    case 405: return "Method Not Allowed"
    case 408: return "Request Timeout"
    case 410: return "Gone"
    case 411: return "Length Required"
    case 413: return "Content Too Large"
    case 414: return "URI Too Long"
    case 415: return "Unsupported Media Type"
    case 417: return "Expectation Failed"
    case 429: return "Too Many Requests"
    case 431: return "Request Header Fields Too Large"
    case 500: return "Internal Server Error"
    case 501: return "Not Implemented"
    case 502: return "Bad Gateway"
    case 503: return "Service Unavailable"
    case 504: return "Gateway Timeout"
    case 505: return "HTTP Version Not Supported"
    default: return "Status"
    }
}

/// Whether `name` is one of the fields the serializer frames itself (any case): told apart by
/// length first, so a usual header is compared with none of the four.
private func isFramingName(_ name: UnsafeRawBufferPointer) -> Bool {
    switch name.count {
    case 4: return asciiCaseInsensitiveEquals(name, literal: "Date")
    case 10: return asciiCaseInsensitiveEquals(name, literal: "Connection")
    case 14: return asciiCaseInsensitiveEquals(name, literal: "Content-Length")
    case 17: return asciiCaseInsensitiveEquals(name, literal: "Transfer-Encoding")
    default: return false
    }
}

/// A literal's bytes as one typed buffer: appending a String's UTF8View went the generic way.
private func append(_ text: StaticString, to out: inout [UInt8]) {
    text.withUTF8Buffer { out.append(contentsOf: $0) }
}

private func appendCRLF(to out: inout [UInt8]) {
    out.append(0x0D)
    out.append(0x0A)
}
private let weekdayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
private let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

private func floorDiv(_ a: Int, _ b: Int) -> Int {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian, exact for any Int day).
private func civilFromDays(_ z0: Int) -> (year: Int, month: Int, day: Int) {
    let z = z0 + 719_468
    let era = floorDiv(z, 146_097)
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    return (year, month, day)
}

private func appendTwoDigits(_ n: Int, to out: inout [UInt8]) {
    out.append(UInt8(0x30 + n / 10))
    out.append(UInt8(0x30 + n % 10))
}
