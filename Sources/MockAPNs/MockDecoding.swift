// The emulator's own decoders. They are written here, and not shared with the APNs client,
// so that a mistake in the client's encoding cannot be mirrored by the checks that judge it.

/// Base64url without padding (RFC 7515 §2), as JWS demands; anything else is refused.
enum MockBase64URL {
    private static let table: [Int8] = {
        var t = [Int8](repeating: -1, count: 256)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = Int8(i) }
        return t
    }()

    /// Decodes unpadded base64url; nil for padding, a foreign character, an impossible length,
    /// or stray low bits in the last character (a non-canonical encoding).
    static func decode<S: Sequence>(_ text: S) -> [UInt8]? where S.Element == UInt8 {
        let input = Array(text)
        if input.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(input.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in input {
            let v = table[Int(c)]
            if v < 0 { return nil }
            acc = (acc << 6) | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        if acc != 0 { return nil }
        return out
    }
}

/// A JSON value as the emulator needs it: numbers keep their text so that `"iat": 1.0` or
/// `"iat": "1700000000"` can be told apart from an integer, as Apple does.
enum MockJSON: Equatable, Sendable {
    case object([String: MockJSON])
    case array([MockJSON])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    subscript(key: String) -> MockJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The value of a number written as a plain integer (no fraction, no exponent), or nil.
    var integerValue: Int64? {
        guard case .number(let text) = self else { return nil }
        guard text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }) else { return nil }
        return Int64(text)
    }

    var isObject: Bool {
        if case .object = self { return true }
        return false
    }

    /// Parses one complete JSON text (RFC 8259); nil when malformed or nested deeper than 64.
    static func parse(_ bytes: [UInt8]) -> MockJSON? {
        var parser = Parser(bytes: bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipSpace()
        return parser.index == bytes.count ? value : nil
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let c = peek, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { index += 1 }
        }

        mutating func literal(_ word: String) -> Bool {
            let w = Array(word.utf8)
            guard index + w.count <= bytes.count, Array(bytes[index..<index + w.count]) == w else { return false }
            index += w.count
            return true
        }

        mutating func value(depth: Int) -> MockJSON? {
            guard depth < 64 else { return nil }
            skipSpace()
            guard let c = peek else { return nil }
            switch c {
            case UInt8(ascii: "{"):
                index += 1
                var members: [String: MockJSON] = [:]
                skipSpace()
                if peek == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard peek == UInt8(ascii: "\""), let key = string() else { return nil }
                    skipSpace()
                    guard peek == UInt8(ascii: ":") else { return nil }
                    index += 1
                    guard let v = value(depth: depth + 1) else { return nil }
                    members[key] = v
                    skipSpace()
                    if peek == UInt8(ascii: ",") { index += 1; continue }
                    if peek == UInt8(ascii: "}") { index += 1; return .object(members) }
                    return nil
                }
            case UInt8(ascii: "["):
                index += 1
                var items: [MockJSON] = []
                skipSpace()
                if peek == UInt8(ascii: "]") { index += 1; return .array(items) }
                while true {
                    guard let v = value(depth: depth + 1) else { return nil }
                    items.append(v)
                    skipSpace()
                    if peek == UInt8(ascii: ",") { index += 1; continue }
                    if peek == UInt8(ascii: "]") { index += 1; return .array(items) }
                    return nil
                }
            case UInt8(ascii: "\""):
                return string().map(MockJSON.string)
            case UInt8(ascii: "t"):
                return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"):
                return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"):
                return literal("null") ? .null : nil
            default:
                return number()
            }
        }

        mutating func digits() -> Int {
            let start = index
            while let c = peek, c >= 0x30 && c <= 0x39 { index += 1 }
            return index - start
        }

        mutating func number() -> MockJSON? {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            if peek == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                return nil
            }
            if peek == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return nil }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return nil }
            }
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        }

        mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[index]
                index += 1
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                default: return nil
                }
                v = v << 4 | d
            }
            return v
        }

        /// Reads a string starting at the opening quote; invalid UTF-8 or a raw control character fails.
        mutating func string() -> String? {
            index += 1
            var out: [UInt8] = []
            while let c = peek {
                index += 1
                switch c {
                case UInt8(ascii: "\""):
                    return String(validating: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let e = peek else { return nil }
                    index += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var scalar = hex4() else { return nil }
                        if scalar >= 0xD800 && scalar < 0xDC00 {
                            guard literal("\\u"), let low = hex4(), low >= 0xDC00 && low < 0xE000 else { return nil }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let u = Unicode.Scalar(scalar) else { return nil }
                        out.append(contentsOf: Array(String(Character(u)).utf8))
                    default:
                        return nil
                    }
                default:
                    if c < 0x20 { return nil }
                    out.append(c)
                }
            }
            return nil
        }
    }
}
