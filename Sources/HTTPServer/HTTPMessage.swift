// HTTP/1.1 message values shared by the parser, the serializer and the socket server.
// Pure Swift, no Foundation: the fuzz build compiles this file on its own, with the Encoders
// files it needs beside it (so it imports that module only in the package build).
#if canImport(Glibc)
import Glibc
#endif
#if !HTTPPARSER_FUZZ
internal import Encoders
#endif

/// The protocol version of a request; the two differ in their keep-alive default.
package enum HTTPVersion: Sendable, Hashable {
    case http10
    case http11
}

/// Header fields in the order they arrived, repeated fields kept.
///
/// Order and repeats matter: a duplicated `Content-Length` or `Host` is a smuggling
/// attempt the parser must see, and `X-Forwarded-For` is read from its first field.
/// Lookups ignore ASCII case because field names are case-insensitive (RFC 9110 §5.1).
///
/// Every field lives in one byte buffer (name and value lengths, then their bytes), so a parsed
/// head is one allocation instead of a String per long name or value; Strings are made only when
/// asked for, and readers on the hot path take the bytes (`withFieldBytes`, `withValue(named:_:)`).
package struct HTTPHeaders: Sendable, Sequence, Equatable, ExpressibleByDictionaryLiteral {
    package typealias Element = (name: String, value: String)

    /// Each field as `nameLength`, `valueLength` (4 bytes each, little-endian), name, value, in
    /// the first `used` bytes; the rest is zeroed room the next fields are written into.
    private var storage: [UInt8] = []
    /// How many bytes of `storage` hold fields.
    private var used = 0
    /// The number of fields, repeats included.
    package private(set) var count = 0

    /// Bytes before each field's name: its two lengths.
    private static let lengthBytes = 8

    package init() {}

    /// Keeps the order of `fields`, so a response's headers go out as written.
    package init(_ fields: [(String, String)]) {
        for (name, value) in fields { add(name, value) }
    }

    /// A dictionary literal keeps its written order here (it is a list of pairs).
    package init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The first value of `name`; the usual way to read a field that should appear once.
    package subscript(name: String) -> String? {
        withValue(named: name) { String(decoding: $0, as: UTF8.self) }
    }

    /// `body` over the bytes of the first value of `name`, without making a String; nil when there
    /// is no such field. The buffer is valid only during the call.
    package func withValue<R>(named name: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        try withFieldBytes { fields in try fields.first(named: name).map(body) }
    }

    /// Every value of `name` in arrival order, for list fields and duplicate checks.
    package func values(_ name: String) -> [String] {
        withFieldBytes { fields in
            var result: [String] = []
            fields.forEach(named: name) { result.append(String(decoding: $0, as: UTF8.self)) }
            return result
        }
    }

    /// Whether any field is named `name`.
    package func contains(_ name: String) -> Bool {
        withValue(named: name) { _ in true } ?? false
    }

    /// The fields in arrival order, as Strings: for a reader that walks them all once.
    package var list: [Element] { Array(self) }

    /// Room for `count` fields of a usual size, so they are stored without growing one by one.
    package mutating func reserveCapacity(_ count: Int) {
        reserveBytes(count * 48)
    }

    /// Room for `byteCount` bytes of fields (each field takes its name, its value and 8 bytes).
    mutating func reserveBytes(_ byteCount: Int) {
        if byteCount > storage.count { grow(toHold: byteCount) }
    }

    /// The bytes this value holds, by capacity: part of what a parser holds for its connection.
    var byteCapacity: Int { storage.capacity }

    /// Appends a field, keeping any earlier one of the same name (repeats are legal).
    package mutating func add(_ name: String, _ value: String) {
        // The bytes where they are: copies of the two values cost a retain and release each.
        StringBytes.with(name) { n in StringBytes.with(value) { v in add(name: UnsafeRawBufferPointer(n), value: UnsafeRawBufferPointer(v)) } }
    }

    /// Appends a field whose value is lent as bytes (UTF-8), for a value that is never a String:
    /// the relay's generated request id.
    package mutating func add(_ name: String, bytes value: UnsafeRawBufferPointer) {
        StringBytes.with(name) { n in add(name: UnsafeRawBufferPointer(n), value: value) }
    }

    /// `add` from bytes, for the parser: nothing is decoded until a String is asked for.
    mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        // Written in place into room made beforehand: an array append per piece (two lengths, the
        // name, the value) had a fixed cost several times that of copying a usual field.
        let total = HTTPHeaders.lengthBytes + name.count + value.count
        if used + total > storage.count { grow(toHold: used + total) }
        let at = used
        storage.withUnsafeMutableBytes { room in
            room.storeBytes(of: UInt32(truncatingIfNeeded: name.count).littleEndian, toByteOffset: at, as: UInt32.self)
            room.storeBytes(of: UInt32(truncatingIfNeeded: value.count).littleEndian, toByteOffset: at + 4, as: UInt32.self)
            let nameStart = at + HTTPHeaders.lengthBytes
            if let source = name.baseAddress, !name.isEmpty {
                (room.baseAddress! + nameStart).copyMemory(from: source, byteCount: name.count)
            }
            if let source = value.baseAddress, !value.isEmpty {
                (room.baseAddress! + nameStart + name.count).copyMemory(from: source, byteCount: value.count)
            }
        }
        used += total
        count += 1
    }

    /// Makes room for at least `byteCount` bytes of fields (doubling, so adds stay amortised
    /// O(1)): the fields are copied over and the rest is zeroed, ready to be written in place.
    private mutating func grow(toHold byteCount: Int) {
        let size = Swift.max(byteCount, storage.count * 2, 64)
        let old = storage, kept = used
        storage = [UInt8](unsafeUninitializedCapacity: size) { room, initialized in
            old.withUnsafeBufferPointer { fields in
                if kept > 0 { room.baseAddress!.initialize(from: fields.baseAddress!, count: kept) }
            }
            // One memset: initialising the room byte by byte cost more than the fields written into it.
            _ = memset(room.baseAddress! + kept, 0, size - kept)
            initialized = size
        }
    }

    /// Replaces every field named `name` with one field, for headers that must appear once.
    package mutating func replaceOrAdd(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// Removes every field named `name`.
    package mutating func remove(_ name: String) {
        guard contains(name) else { return }
        var kept = HTTPHeaders()
        withFieldBytes { fields in
            fields.forEach { fieldName, value in
                if !asciiCaseInsensitiveEquals(fieldName, name) { kept.add(name: fieldName, value: value) }
            }
        }
        self = kept
    }

    package var isEmpty: Bool { count == 0 }

    /// `body` with every field's bytes: the buffers `FieldBytes` hands out stay valid until `body`
    /// returns, so a reader may keep them for the whole call (the WebPush parser does).
    package func withFieldBytes<R>(_ body: (FieldBytes) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { try body(FieldBytes(bytes: UnsafeRawBufferPointer(rebasing: $0[..<used]))) }
    }

    /// The fields of one `HTTPHeaders` as bytes, valid during `withFieldBytes`.
    package struct FieldBytes {
        fileprivate let bytes: UnsafeRawBufferPointer

        /// Calls `visit` with each field's name and value, in arrival order.
        package func forEach(_ visit: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) rethrows {
            var i = 0
            while i < bytes.count {
                let nameCount = length(at: i), valueCount = length(at: i + 4)
                let nameStart = i + HTTPHeaders.lengthBytes, valueStart = nameStart + nameCount
                i = valueStart + valueCount
                try visit(UnsafeRawBufferPointer(rebasing: bytes[nameStart..<valueStart]),
                          UnsafeRawBufferPointer(rebasing: bytes[valueStart..<i]))
            }
        }

        /// Calls `visit` with each value of the fields named `name` (in any case), in arrival order.
        package func forEach(named name: String, _ visit: (_ value: UnsafeRawBufferPointer) throws -> Void) rethrows {
            try forEach { fieldName, value in
                if asciiCaseInsensitiveEquals(fieldName, name) { try visit(value) }
            }
        }

        /// The first value of the fields named `name`, or nil.
        package func first(named name: String) -> UnsafeRawBufferPointer? {
            var i = 0
            while i < bytes.count {
                let nameCount = length(at: i), valueCount = length(at: i + 4)
                let nameStart = i + HTTPHeaders.lengthBytes, valueStart = nameStart + nameCount
                i = valueStart + valueCount
                if asciiCaseInsensitiveEquals(UnsafeRawBufferPointer(rebasing: bytes[nameStart..<valueStart]), name) {
                    return UnsafeRawBufferPointer(rebasing: bytes[valueStart..<i])
                }
            }
            return nil
        }

        private func length(at i: Int) -> Int {
            Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)))
        }
    }

    package struct Iterator: IteratorProtocol {
        fileprivate let storage: [UInt8]
        /// Where the fields end in `storage`.
        fileprivate let end: Int
        fileprivate var offset = 0

        package mutating func next() -> Element? {
            guard offset < end else { return nil }
            return storage.withUnsafeBytes { bytes in
                let nameCount = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let valueCount = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
                let nameStart = offset + HTTPHeaders.lengthBytes, valueStart = nameStart + nameCount
                offset = valueStart + valueCount
                return (name: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<valueStart]), as: UTF8.self),
                        value: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<offset]), as: UTF8.self))
            }
        }
    }

    package func makeIterator() -> Iterator { Iterator(storage: storage, end: used) }

    package var underestimatedCount: Int { count }

    /// Equal when the same fields arrive in the same order with the same spelling (byte for byte).
    package static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.count == rhs.count && lhs.storage[..<lhs.used] == rhs.storage[..<rhs.used]
    }
}

/// One complete request, body included: the relay needs the whole encrypted body
/// before it can build the APNs payload, so streaming would buy nothing.
package struct HTTPRequest: Sendable, Equatable {
    package var method: String
    /// The raw request-target, as sent (percent-encoding untouched).
    package var target: String
    /// `target` before the first `?`: what routing matches on. An absolute-form target
    /// (`http://host/push/…`, which RFC 9112 says a server must accept) is reduced to its path.
    package var path: String
    /// `target` after the first `?`, or nil when there is no `?`.
    package var query: String?
    package var version: HTTPVersion
    package var headers: HTTPHeaders
    package var body: [UInt8]
    /// Whether the connection may carry another request after this one's response.
    package var keepAlive: Bool
    /// Set by the server from the socket; the parser leaves it as given at its init.
    package var peerAddress: String?
    /// The first `X-Forwarded-For` entry: the client as the reverse proxy saw it, for logs.
    package var forwardedFor: String?
    /// `X-Request-ID`, so a log line can be matched with the proxy's.
    package var requestID: String?

    package init(
        method: String, target: String, version: HTTPVersion = .http11,
        headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], keepAlive: Bool = true,
        peerAddress: String? = nil
    ) {
        self.method = method
        self.target = target
        let origin = Self.originForm(target)
        if let q = firstByteIndex(of: UInt8(ascii: "?"), in: origin) {
            self.path = String(origin[..<q])
            self.query = String(origin[origin.index(after: q)...])
        } else {
            self.path = String(origin)
            self.query = nil
        }
        self.version = version
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
        self.peerAddress = peerAddress
        // Both in one walk over the fields (each is the first value of its name, as a lookup by
        // name reads it): two lookups walked every field twice per request.
        var forwardedFor: String?, requestID: String?
        var sawForwardedFor = false, sawRequestID = false
        headers.withFieldBytes { fields in
            fields.forEach { name, value in
                switch name.count {
                case 15 where !sawForwardedFor && asciiCaseInsensitiveEquals(name, literal: "X-Forwarded-For"):
                    sawForwardedFor = true
                    forwardedFor = firstListElement(String(decoding: value, as: UTF8.self))
                case 12 where !sawRequestID && asciiCaseInsensitiveEquals(name, literal: "X-Request-ID"):
                    sawRequestID = true
                    requestID = String(decoding: value, as: UTF8.self)
                default:
                    break
                }
            }
        }
        self.forwardedFor = forwardedFor
        self.requestID = requestID
    }

    /// `http://host:port/p?q` → `/p?q` (`/` when the path is empty); anything else as is.
    static func originForm(_ target: String) -> Substring {
        let t = target[...]
        // Origin form, what every client but a proxy sends: nothing to reduce.
        if target.utf8.first == UInt8(ascii: "/") { return t }
        for scheme in ["http://", "https://"] where t.utf8.count > scheme.utf8.count {
            let head = t.prefix(scheme.count)
            guard head.lowercased() == scheme else { continue }
            let rest = t.dropFirst(scheme.count)
            guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
            return rest[slash] == "/" ? rest[slash...] : "/" + rest[slash...]
        }
        return t
    }
}

/// A response the server frames itself: `serialize` adds Content-Length, Date and
/// Connection, so handlers cannot get the framing wrong.
package struct HTTPResponse: Sendable, Equatable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: [UInt8]

    package init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A plain-text body, the form for one-line error reasons that humans read in logs.
    package init(status: Int, text: String, headers: HTTPHeaders = HTTPHeaders()) {
        var headers = headers
        if !headers.contains("Content-Type") { headers.add("Content-Type", "text/plain; charset=utf-8") }
        self.init(status: status, headers: headers, body: Array(text.utf8))
    }

    /// An already-encoded JSON body (e.g. `{"reason":…,"timestamp":…}` for a 410),
    /// so this module needs no JSON encoder.
    package init(status: Int, json: String, headers: HTTPHeaders = HTTPHeaders()) {
        var headers = headers
        if !headers.contains("Content-Type") { headers.add("Content-Type", "application/json") }
        self.init(status: status, headers: headers, body: Array(json.utf8))
    }

    /// An error answer: `{"reason": "…"}`, one line saying what was wrong, the form every
    /// non-2xx answer of the relay takes so senders and operators can read it the same way.
    package init(status: Int, reason: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.init(status: status, json: JSONString.reasonBody(reason), headers: headers)
    }

    /// The answer to a request the parser rejected: its status and its one-line reason.
    package init(parseError: HTTPParseError) {
        self.init(status: parseError.status, reason: parseError.reason)
    }

    /// `HTTP/1.1 100 Continue` followed by the blank line, sent as-is on `.expectContinue`.
    package static let continueHead: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}

/// Why the parser refused a request: the status to answer with (its `code`), and a one-line
/// reason that tells the sender what to fix (its `message`). The connection answers it, then
/// closes. Equal when both agree: the reason is the answer's body, not only words for a log.
package struct HTTPParseError: CodedError {
    package let status: Int
    package let reason: String

    package init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    package var code: Int { status }
    package var message: String { reason }
    package var description: String { "\(status) \(reason)" }
    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.status == rhs.status && lhs.reason == rhs.reason }
}

/// Caps that bound the memory one connection can make the server hold.
package struct HTTPParserLimits: Sendable, Equatable {
    /// Longest request line (without CRLF); beyond it the answer is 414.
    package var maxRequestLineBytes: Int
    /// Sum of header line lengths (without CRLF); beyond it the answer is 431.
    /// Trailers of a chunked body get a budget of the same size.
    package var maxHeaderBytes: Int
    /// Most header fields; beyond it the answer is 431.
    package var maxHeaderCount: Int
    /// Largest body; a declared length above it is refused with 413 before reading.
    package var maxBodyBytes: Int

    package init(
        maxRequestLineBytes: Int = 8192, maxHeaderBytes: Int = 16384,
        maxHeaderCount: Int = 100, maxBodyBytes: Int = 65536
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }
}

// MARK: - small ASCII helpers shared by the module

@inline(__always)
func asciiLower(_ b: UInt8) -> UInt8 {
    (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b
}

/// `asciiCaseInsensitiveEquals` for a name held as bytes (a stored field's) and a String.
func asciiCaseInsensitiveEquals(_ a: UnsafeRawBufferPointer, _ b: String) -> Bool {
    let bu = b.utf8
    guard a.count == bu.count else { return false }
    if let equal = bu.withContiguousStorageIfAvailable({ pb in
        for i in 0..<pb.count where asciiLower(a[i]) != asciiLower(pb[i]) { return false }
        return true
    }) {
        return equal
    }
    return zip(a, bu).allSatisfy { asciiLower($0) == asciiLower($1) }
}

/// `asciiCaseInsensitiveEquals` for a stored name and a literal (the fields the server itself
/// reads): a `StaticString`'s bytes are at hand, with none of a String's ways to reach them.
func asciiCaseInsensitiveEquals(_ a: UnsafeRawBufferPointer, literal b: StaticString) -> Bool {
    guard a.count == b.utf8CodeUnitCount else { return false }
    return b.withUTF8Buffer { pb in
        for i in 0..<pb.count where asciiLower(a[i]) != asciiLower(pb[i]) { return false }
        return true
    }
}

func asciiCaseInsensitiveEquals(_ a: String, _ b: String) -> Bool {
    let au = a.utf8, bu = b.utf8
    guard au.count == bu.count else { return false }
    // Over the contiguous bytes (every native or small String has them): every header lookup
    // compares names, and walking two UTF8Views through `zip` cost more than the comparison.
    let fast = au.withContiguousStorageIfAvailable { pa in
        bu.withContiguousStorageIfAvailable { pb in
            for i in 0..<pa.count where asciiLower(pa[i]) != asciiLower(pb[i]) { return false }
            return true
        }
    }
    if let fast, let result = fast { return result }
    var i = au.startIndex, j = bu.startIndex
    while i != au.endIndex {
        if asciiLower(au[i]) != asciiLower(bu[j]) { return false }
        au.formIndex(after: &i)
        bu.formIndex(after: &j)
    }
    return true
}

@inline(__always)
func isOWS(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }

/// Where `byte` first is in `s`, found over its contiguous bytes: stepping a UTF8View's indices
/// one by one cost several times the search, once per request for the target's `?`.
func firstByteIndex(of byte: UInt8, in s: Substring) -> Substring.Index? {
    let utf8 = s.utf8
    if let offset = utf8.withContiguousStorageIfAvailable({ firstIndex(of: byte, in: $0, 0 ..< $0.count) }) {
        return offset.map { utf8.index(utf8.startIndex, offsetBy: $0) }
    }
    return utf8.firstIndex(of: byte)
}

/// The first element of a comma-separated list, trimmed; nil when it is empty.
func firstListElement(_ value: String) -> String? {
    let utf8 = value.utf8
    let end = utf8.firstIndex(of: UInt8(ascii: ",")) ?? utf8.endIndex
    let trimmed = trimOWS(utf8[utf8.startIndex..<end])
    return trimmed.isEmpty ? nil : String(Substring(trimmed))
}

/// Comma-separated list elements, trimmed, empty elements dropped (RFC 9110 §5.6.1).
/// Splits bytes, not Characters, so a combining mark cannot hide a comma.
func listElements(_ values: [String]) -> [Substring] {
    var out: [Substring] = []
    for value in values {
        for part in value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true) {
            let t = trimOWS(part)
            if !t.isEmpty { out.append(Substring(t)) }
        }
    }
    return out
}

func trimOWS(_ s: Substring.UTF8View) -> Substring.UTF8View {
    var u = s
    while let f = u.first, isOWS(f) { u = u.dropFirst() }
    while let l = u.last, isOWS(l) { u = u.dropLast() }
    return u
}

/// RFC 9110 tchar: the bytes allowed in a method and a field name — `!#$%&'*+-.^_`|~`, digits
/// and letters — as one bit per byte in two words (bytes 0–63, then 64–127; none above): a
/// shift and a mask per byte instead of a chain of comparisons, for every byte of every name.
@inline(__always)
func isTokenChar(_ b: UInt8) -> Bool {
    let low: UInt64 = 0x03ff_6cfa_0000_0000, high: UInt64 = 0x57ff_ffff_c7ff_fffe
    // `&>>`: each amount is below 64, so the plain shift instruction does (`>>` checks for more).
    if b < 64 { return (low &>> UInt64(b)) & 1 != 0 }
    if b < 128 { return (high &>> UInt64(b &- 64)) & 1 != 0 }
    return false
}
