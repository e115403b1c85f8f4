// Byte and ASCII helpers the parser, the serializer and the message values share.
// Pure Swift, no Foundation: the fuzz build compiles it with the parser.
#if canImport(Glibc)
import Glibc
#endif
#if !HTTPPARSER_FUZZ
internal import Basics
#endif

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

/// True when the 8 bytes at `i` are all in 0x20...0x7E, the bytes the line scan passes without
/// a closer look (a high bit, a control byte or a 0x7F anywhere makes it false).
@inline(__always)
func allPrintableASCII(_ p: UnsafeBufferPointer<UInt8>, at i: Int) -> Bool {
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
func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

@inline(__always)
func hexValue(_ b: UInt8) -> Int? {
    switch b {
    case 0x30...0x39: return Int(b - 0x30)
    case 0x41...0x46: return Int(b - 0x41 + 10)
    case 0x61...0x66: return Int(b - 0x61 + 10)
    default: return nil
    }
}

func hex(_ b: UInt8) -> String {
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

func string(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
    String(decoding: UnsafeBufferPointer(rebasing: p[range]), as: UTF8.self)
}

/// Digits only: no sign, no spaces inside, no overflow (a wrapped length smuggles a body).
func parseDecimal(_ s: UnsafeRawBufferPointer) -> Int? {
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
