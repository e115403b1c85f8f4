/// JSON string literals written by hand, the one escaping rule of every JSON the package writes:
/// APNs payloads, the relay's answers and JSON log lines. Every one is a few known keys, so a
/// full encoder would only cost allocations.
///
/// RFC 8259: `"` and `\` get a backslash; backspace, form feed, newline, return and tab their
/// short escapes; every other control character and DEL `\u00xx`; U+2028 and U+2029 `\u2028`,
/// `\u2029`, because some JavaScript readers of log lines take them as line ends. Everything
/// else, UTF-8 included, passes through; runs of plain bytes are copied whole.
package enum JSONString {
    /// What one byte at `i` becomes: nil when it passes through, else the escape and the bytes
    /// it stands for (3 for U+2028/2029, 1 otherwise). `\u00xx` is spelled out by the callers.
    @inline(__always)
    private static func escape(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> (text: StaticString, width: Int)? {
        let b = bytes[i]
        switch b {
        case UInt8(ascii: "\""): return ("\\\"", 1)
        case UInt8(ascii: "\\"): return ("\\\\", 1)
        case 0x0A: return ("\\n", 1)
        case 0x0D: return ("\\r", 1)
        case 0x09: return ("\\t", 1)
        case 0x08: return ("\\b", 1)
        case 0x0C: return ("\\f", 1)
        case 0x00 ..< 0x20, 0x7F: return ("", 1)
        case 0xE2 where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
            return (bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 3)
        default: return nil
        }
    }

    /// False for every byte `escape` passes through without a look at its neighbours: all but
    /// control characters, `"`, `\`, DEL and 0xE2 (the lead byte of U+2028/2029).
    @inline(__always)
    private static func mayNeedEscape(_ b: UInt8) -> Bool {
        b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b == 0x7F || b == 0xE2
    }

    /// False when none of the 8 bytes at `i` may need an escape (`mayNeedEscape` for all 8 at
    /// once, SWAR): a payload's long base64 message and most log values are passed 8 bytes per
    /// test instead of one.
    @inline(__always)
    private static func blockMayNeedEscape(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> Bool {
        wordMayNeedEscape(UnsafeRawPointer(bytes.baseAddress! + i).loadUnaligned(as: UInt64.self))
    }

    /// `mayNeedEscape` for each byte of `w`. "Any byte below n / equal to v" tests are exact for
    /// the whole word (a borrow only ever spreads from a byte that is itself a hit).
    @inline(__always)
    private static func wordMayNeedEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func zeroByte(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        let below20 = (w &- ones &* 0x20) & ~w & highs
        return (below20 | zeroByte(w ^ (ones &* 0x22)) | zeroByte(w ^ (ones &* 0x5C))
            | zeroByte(w ^ (ones &* 0x7F)) | zeroByte(w ^ (ones &* 0xE2))) != 0
    }

    /// The last `bytes.count - i` (fewer than 8) bytes as a word, the rest filled with `a`, which
    /// needs no escape: a short value's tail is tested at once, like a whole block.
    @inline(__always)
    private static func tailWord(_ bytes: UnsafeBufferPointer<UInt8>, from i: Int) -> UInt64 {
        var w: UInt64 = 0x6161_6161_6161_6161
        withUnsafeMutableBytes(of: &w) { word in
            for k in 0 ..< (bytes.count &- i) { word[k] = bytes[i &+ k] }
        }
        return w
    }

    /// Bytes `s` takes between the quotes once escaped.
    package static func escapedCount(_ s: String) -> Int {
        var n = 0
        StringBytes.with(s) { n = escapedCount(utf8: $0) }
        return n
    }

    /// `escapedCount` over the bytes: each escape's text replaces its bytes.
    private static func escapedCount(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var n = bytes.count
        forEachEscape(in: bytes) { _, found in
            n += (found.text.utf8CodeUnitCount == 0 ? 6 : found.text.utf8CodeUnitCount) - found.width
        }
        return n
    }

    /// Calls `body` with the offset and escape of every byte sequence of `bytes` that needs one,
    /// in order: the one scan of the escape rule, for counting, appending and writing alike.
    /// Whole words pass while none of their bytes may need an escape, the tail as one padded
    /// word; only a word that may hold one is looked at byte by byte.
    @inline(__always)
    private static func forEachEscape(in bytes: UnsafeBufferPointer<UInt8>,
                                      _ body: (_ at: Int, _ found: (text: StaticString, width: Int)) -> Void) {
        let count = bytes.count
        var i = 0
        while i < count {
            if i &+ 8 <= count {
                if !blockMayNeedEscape(bytes, at: i) { i &+= 8; continue }
            } else if !wordMayNeedEscape(tailWord(bytes, from: i)) {
                return
            }
            let end = min(i &+ 8, count)
            while i < end {
                guard mayNeedEscape(bytes[i]), let found = escape(bytes, at: i) else { i &+= 1; continue }
                body(i, found)
                i += found.width
            }
        }
    }

    /// Appends `s` escaped, without the quotes.
    package static func appendEscaped(_ s: String, to out: inout [UInt8]) {
        StringBytes.with(s) { bytes in
            var runStart = 0
            forEachEscape(in: bytes) { i, found in
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart ..< i]))
                if found.text.utf8CodeUnitCount > 0 {
                    found.text.withUTF8Buffer { out.append(contentsOf: $0) }
                } else {
                    let b = bytes[i]
                    out.append(contentsOf: #"\u00"#.utf8)
                    out.append(Hex.digits[Int(b >> 4)])
                    out.append(Hex.digits[Int(b & 0x0F)])
                }
                runStart = i + found.width
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart ..< bytes.count]))
        }
    }

    /// Writes `bytes` escaped, without the quotes, at `out`, which has room for 6 bytes per input
    /// byte (what `\u00xx` takes); returns how many it wrote. `JSONBlock`'s way to the rule, byte
    /// for byte what `appendEscaped` appends.
    static func escape(_ bytes: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) -> Int {
        var written = 0
        var runStart = 0
        forEachEscape(in: bytes) { i, found in
            (out + written).initialize(from: bytes.baseAddress! + runStart, count: i - runStart)
            written += i - runStart
            if found.text.utf8CodeUnitCount > 0 {
                (out + written).initialize(from: found.text.utf8Start, count: found.text.utf8CodeUnitCount)
                written += found.text.utf8CodeUnitCount
            } else {
                let b = bytes[i]
                let prefix: StaticString = #"\u00"#
                (out + written).initialize(from: prefix.utf8Start, count: 4)
                out[written + 4] = Hex.digits[Int(b >> 4)]
                out[written + 5] = Hex.digits[Int(b & 0x0F)]
                written += 6
            }
            runStart = i + found.width
        }
        if runStart < bytes.count {
            (out + written).initialize(from: bytes.baseAddress! + runStart, count: bytes.count - runStart)
            written += bytes.count - runStart
        }
        return written
    }

    /// Appends `s` as a quoted JSON string literal.
    package static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        appendEscaped(s, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// `s` as a quoted JSON string literal.
    package static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 2)
        appendQuoted(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `{"reason":…}`, plus `"timestamp"` when given: the body of every non-2xx answer of the
    /// relay (the HTTP server's own refusals and the push answers alike), so senders and
    /// operators read them the same way.
    package static func reasonBody(_ reason: String, timestamp: Int64? = nil) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(reason.utf8.count + 40)
        out.append(contentsOf: #"{"reason":"#.utf8)
        appendQuoted(reason, to: &out)
        if let timestamp { out.append(contentsOf: #","timestamp":"#.utf8); out.append(contentsOf: String(timestamp).utf8) }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

/// JSON text put together in a block of memory the caller lends (a log line's, on the stack) and
/// moved into `out` in one append when the block is full and at `flush()`: a line of a dozen short
/// fields costs a couple of array appends instead of two or three per field. The bytes are exactly
/// those `JSONString`'s array writers and `DecimalText` append (a test holds them together).
///
/// The block must outlive the value, and only this value may write to it; `write(into:_:)` lends
/// one on the stack for the length of a call, which is how every caller gets one.
package struct JSONBlock {
    /// Where the text goes: what was there before it, then everything flushed so far.
    package var out: [UInt8]
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var used = 0

    private init(out: consuming [UInt8], block: UnsafeMutableBufferPointer<UInt8>) {
        self.out = out
        base = block.baseAddress!
        capacity = block.count
    }

    /// Block size: as much as the stack lends without asking how much it has left, and room for
    /// a whole push log line.
    static let blockSize = 1024

    /// Runs `build` with a block on the stack that writes on at the end of `out`, and flushes it.
    /// `out` is lent to the block and taken back: moved, never copied.
    package static func write(into out: inout [UInt8], _ build: (inout JSONBlock) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: blockSize) { block in
            var text = JSONBlock(out: [], block: block)
            swap(&text.out, &out)
            build(&text)
            text.flush()
            swap(&text.out, &out)
        }
    }

    /// The bytes `build` writes, as a new array.
    package static func bytes(_ build: (inout JSONBlock) -> Void) -> [UInt8] {
        var out: [UInt8] = []
        write(into: &out, build)
        return out
    }

    /// Moves what the block holds to the end of `out`.
    package mutating func flush() {
        guard used > 0 else { return }
        out.append(contentsOf: UnsafeBufferPointer(start: base, count: used))
        used = 0
    }

    /// True when `count` more bytes fit in the block, flushing it first if they fit only then;
    /// false when they never would (the caller appends to `out` itself, after a flush).
    private mutating func room(_ count: Int) -> Bool {
        if used &+ count <= capacity { return true }
        flush()
        return count <= capacity
    }

    package mutating func append(_ byte: UInt8) {
        if used == capacity { flush() }
        base[used] = byte
        used &+= 1
    }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard room(bytes.count) else { return out.append(contentsOf: bytes) }
        if bytes.count > 0 { UnsafeMutableRawPointer(base + used).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        used &+= bytes.count
    }

    package mutating func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// `text`'s bytes as they are, unescaped.
    package mutating func append(raw text: String) {
        StringBytes.with(text) { append(UnsafeRawBufferPointer($0)) }
    }

    /// `value` in decimal, as `DecimalText.append` writes it.
    package mutating func append(_ value: Int) {
        DecimalText.withDigits(value) { append(UnsafeRawBufferPointer($0)) }
    }

    /// Up to `count` bytes written straight into the block by `write`, which returns how many it wrote.
    package mutating func append(upTo count: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Int) {
        precondition(room(count), "a direct write larger than the block")
        used &+= write(base + used)
    }

    /// `s` as a quoted JSON string literal, as `JSONString.appendQuoted` writes it.
    package mutating func appendQuoted(_ s: String) {
        var written = false
        StringBytes.with(s) { written = appendQuotedInBlock($0) }
        if !written { JSONString.appendQuoted(s, to: &out) }
    }

    /// The text whose UTF-8 bytes are `bytes`, quoted, as `appendQuoted(_:)` writes it.
    package mutating func appendQuoted(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        if !appendQuotedInBlock(bytes) { JSONString.appendQuoted(String(decoding: bytes, as: UTF8.self), to: &out) }
    }

    /// False, and nothing written, when even the worst case (every byte a `\u00xx`) would not
    /// fit in the block: the array writer takes such a value.
    private mutating func appendQuotedInBlock(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard room(bytes.count &* 6 &+ 2) else { return false }
        base[used] = UInt8(ascii: "\"")
        let n = JSONString.escape(bytes, into: base + used + 1)
        base[used + 1 + n] = UInt8(ascii: "\"")
        used &+= n &+ 2
        return true
    }
}
