/// base64url (RFC 4648 §5): the alphabet of provider tokens (RFC 7515 §2 drops the padding),
/// of every WebPush key and salt, and of the relay's `m` field (padded, so the app's decoder
/// needs no fix-up).
package enum Base64URL {
    package static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Characters `count` bytes take, padded to whole quanta.
    package static func paddedCount(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Characters `count` bytes take without padding.
    package static func unpaddedCount(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Appends `bytes` encoded. The output grows once by the encoded size and is written in
    /// place: appending byte by byte paid a capacity and uniqueness check per output byte, the
    /// relay's payload mapper's largest cost.
    package static func append(_ bytes: [UInt8], padded: Bool, to out: inout [UInt8]) {
        let n = bytes.count
        guard n > 0 else { return }
        let start = out.count
        let count = padded ? paddedCount(n) : unpaddedCount(n)
        out.append(contentsOf: repeatElement(UInt8(ascii: "="), count: count))
        bytes.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { all in
                encode(src, padded: padded, into: UnsafeMutableBufferPointer(rebasing: all[start ..< (start + count)]))
            }
        }
    }

    /// Writes `bytes` encoded into `dst`, which must be exactly `paddedCount` (or `unpaddedCount`)
    /// bytes long: for a writer that sized its output before writing it.
    package static func encode(_ src: UnsafeBufferPointer<UInt8>, padded: Bool, into dst: UnsafeMutableBufferPointer<UInt8>) {
        let n = src.count
        precondition(dst.count == (padded ? paddedCount(n) : unpaddedCount(n)), "base64 output of the wrong size")
        guard n > 0 else { return }
        var i = 0, o = 0
        pairs.withUnsafeBufferPointer { pairs in
            let input = UnsafeRawPointer(src.baseAddress!)
            let out = UnsafeMutableRawPointer(dst.baseAddress!)
            // Six bytes at a time, read as one big-endian word (so eight must be there to read):
            // four 12-bit values, each two characters from `pairs`, stored as one word. Three
            // bytes a step, each read on its own, cost half as much again over a push's body.
            while i &+ 8 <= n {
                let w = UInt64(bigEndian: input.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                let chars = UInt64(pairs[Int(truncatingIfNeeded: w >> 52)])
                    | UInt64(pairs[Int(truncatingIfNeeded: w >> 40) & 0xFFF]) << 16
                    | UInt64(pairs[Int(truncatingIfNeeded: w >> 28) & 0xFFF]) << 32
                    | UInt64(pairs[Int(truncatingIfNeeded: w >> 16) & 0xFFF]) << 48
                out.storeBytes(of: chars.littleEndian, toByteOffset: o, as: UInt64.self)
                i &+= 6
                o &+= 8
            }
            // Three bytes are 24 bits: two lookups of two characters each.
            while i &+ 3 <= n {
                let v = Int(src[i]) << 16 | Int(src[i &+ 1]) << 8 | Int(src[i &+ 2])
                out.storeBytes(of: pairs[v >> 12].littleEndian, toByteOffset: o, as: UInt16.self)
                out.storeBytes(of: pairs[v & 0xFFF].littleEndian, toByteOffset: o &+ 2, as: UInt16.self)
                i &+= 3
                o &+= 4
            }
        }
        // The tail: one or two bytes left; padded, the rest of the last quantum is "=".
        guard n - i >= 1 else { return }
        alphabet.withUnsafeBufferPointer { table in
            let v = UInt32(src[i]) << 16 | (n - i == 2 ? UInt32(src[i + 1]) << 8 : 0)
            dst[o] = table[Int(v >> 18 & 63)]
            dst[o + 1] = table[Int(v >> 12 & 63)]
            if n - i == 2 { dst[o + 2] = table[Int(v >> 6 & 63)] }
            if padded {
                if n - i == 1 { dst[o + 2] = UInt8(ascii: "=") }
                dst[o + 3] = UInt8(ascii: "=")
            }
        }
    }

    /// The two characters of every 12-bit value, the first in the low byte (stored little-endian,
    /// so it comes first in memory): the encoder writes two characters a lookup. 8 KiB, made once
    /// from `alphabet`.
    private static let pairs: [UInt16] = (0 ..< 4096).map { v in UInt16(alphabet[v >> 6]) | UInt16(alphabet[v & 63]) << 8 }

    /// `bytes` encoded, unpadded unless asked.
    package static func encode(_ bytes: [UInt8], padded: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(paddedCount(bytes.count))
        append(bytes, padded: padded, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The six bits a character stands for, in either alphabet: senders differ, so the URL-safe
    /// `-_` and the standard `+/` are both read.
    package static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A") ... UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a") ... UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"), UInt8(ascii: "+"): return 62
        case UInt8(ascii: "_"), UInt8(ascii: "/"): return 63
        default: return nil
        }
    }

    /// Checks `text` (either alphabet, padded or not; padding only at the end, at most two, and
    /// then to a whole quantum) and returns the decoded length and first byte (0 when empty)
    /// without decoding: the relay forwards the text, it only needs to know it is sound.
    package static func decodedInfo<S: StringProtocol>(_ text: S) -> (count: Int, first: UInt8)? {
        // Scanned as a buffer: walking the string's indexes cost more than the check.
        text.utf8.withContiguousStorageIfAvailable { decodedInfo(bytes: $0) }
            ?? Array(text.utf8).withUnsafeBufferPointer { decodedInfo(bytes: $0) }
    }

    /// `decodedInfo` over a String's bytes, without the generic path (the WebPush parser checks
    /// a salt and a key per push).
    package static func decodedInfo(_ text: String) -> (count: Int, first: UInt8)? {
        var info: (count: Int, first: UInt8)?
        StringBytes.with(text) { info = decodedInfo(bytes: $0) }
        return info
    }

    /// What `value` says for every byte, 0xFF where it says nil: the check reads one table entry
    /// a character instead of a chain of range tests.
    private static let values: [UInt8] = (0 ... 255).map { value(UInt8($0)) ?? 0xFF }

    /// `decodedInfo` over bytes: the padding is the run of `=` at the end; every byte before it
    /// must be a symbol (an `=` there, like any other non-symbol, has no value).
    package static func decodedInfo(bytes: UnsafeBufferPointer<UInt8>) -> (count: Int, first: UInt8)? {
        var symbols = bytes.count
        while symbols > 0, bytes[symbols - 1] == UInt8(ascii: "=") { symbols -= 1 }
        let padding = bytes.count - symbols
        guard symbols % 4 != 1 else { return nil }
        if padding > 0 {
            guard symbols > 0, padding <= 2, (symbols + padding) % 4 == 0 else { return nil }
        }
        return values.withUnsafeBufferPointer { table -> (count: Int, first: UInt8)? in
            // Every symbol's value is below 64, so one OR says whether any byte had none.
            var seen: UInt8 = 0
            for i in 0 ..< symbols { seen |= table[Int(bytes[i])] }
            guard seen < 64 else { return nil }
            let v0 = symbols > 0 ? table[Int(bytes[0])] : 0
            let v1 = symbols > 1 ? table[Int(bytes[1])] : 0
            return (symbols * 3 / 4, v0 << 2 | v1 >> 4)
        }
    }

    /// The bytes of a text `decodedInfo` accepts; nil for anything it refuses.
    package static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        guard let info = decodedInfo(text) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(info.count)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in text.utf8 {
            guard let v = value(byte) else { continue }  // only `=` padding is left to skip
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out
    }
}
