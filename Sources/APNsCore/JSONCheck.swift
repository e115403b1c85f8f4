internal import Basics

/// Checks that bytes are one JSON object (RFC 8259) holding an `aps` object, and tells whether
/// `aps` holds only `content-available`, without building any value.
///
/// Every push's payload goes through this check; `JSONSerialization` built a whole object
/// graph for it and was the relay's largest single cost per push. The rules follow what
/// `JSONSerialization` accepts: UTF-8 only, a trailing comma tolerated, no garbage, escapes checked
/// (a lone surrogate is refused), nesting at most 512 deep, duplicate keys allowed with the
/// last one winning.
enum JSONCheck {
    enum Outcome: Equatable {
        case notJSON
        case notObject
        case noAPSObject
        /// `backgroundOnly`: `aps` has exactly one distinct key, `content-available`.
        case valid(backgroundOnly: Bool)
    }

    static let maxDepth = 512

    static func check(_ bytes: [UInt8]) -> Outcome {
        // Non-ASCII bytes must form valid UTF-8; checked once here so the scanner sees bytes only.
        if !bytes.allSatisfy({ $0 < 0x80 }) {
            guard String(validating: bytes, as: UTF8.self) != nil else { return .notJSON }
        }
        return bytes.withUnsafeBufferPointer { p in
            var scanner = Scanner(p: p)
            return scanner.top()
        }
    }

    /// The scanner's one error: the bytes are not JSON (where and why is never needed).
    struct Failure: Error {}

    /// The lexical rules, shared with `APNsJSON.parse`, which builds values with them.
    struct Scanner {
        let p: UnsafeBufferPointer<UInt8>
        var i = 0

        init(p: UnsafeBufferPointer<UInt8>) { self.p = p }

        mutating func top() -> Outcome {
            do {
                skipSpace()
                guard i < p.count else { return .notJSON }
                guard p[i] == UInt8(ascii: "{") else {
                    // Like JSONSerialization without `.fragmentsAllowed`: a bare scalar is not a document.
                    guard p[i] == UInt8(ascii: "[") else { return .notJSON }
                    try value(depth: 0)
                    skipSpace()
                    return i == p.count ? .notObject : .notJSON
                }
                // The top object by hand: its `aps` member is the one that matters.
                i += 1
                // nil: no `aps` yet; false: the last `aps` is not an object; true: it is.
                var apsIsObject: Bool?
                var backgroundOnly = false
                skipSpace()
                if peek() == UInt8(ascii: "}") {
                    i += 1
                } else {
                    while true {
                        skipSpace()
                        let isAPS = try key() == "aps"
                        skipSpace()
                        try expect(UInt8(ascii: ":"))
                        skipSpace()
                        if isAPS {
                            if peek() == UInt8(ascii: "{") {
                                backgroundOnly = try apsObject()
                                apsIsObject = true
                            } else {
                                try value(depth: 1)
                                apsIsObject = false
                            }
                        } else {
                            try value(depth: 1)
                        }
                        skipSpace()
                        if try comma(before: UInt8(ascii: "}")) { continue }
                        break
                    }
                }
                skipSpace()
                guard i == p.count else { return .notJSON }
                guard apsIsObject == true else { return .noAPSObject }
                return .valid(backgroundOnly: backgroundOnly)
            } catch {
                return .notJSON
            }
        }

        /// The `aps` object; true when its only distinct key is `content-available`.
        mutating func apsObject() throws(Failure) -> Bool {
            i += 1
            var sawContentAvailable = false
            var sawOther = false
            skipSpace()
            if peek() == UInt8(ascii: "}") { i += 1; return false }
            while true {
                skipSpace()
                if try key() == "content-available" { sawContentAvailable = true } else { sawOther = true }
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                try value(depth: 2)
                skipSpace()
                if try comma(before: UInt8(ascii: "}")) { continue }
                return sawContentAvailable && !sawOther
            }
        }

        /// A member name, decoded only when it holds an escape (rare; the fast path compares bytes).
        mutating func key() throws(Failure) -> String {
            guard peek() == UInt8(ascii: "\"") else { throw Failure() }
            let start = i + 1
            let hadEscape = try string()
            if !hadEscape {
                return String(decoding: UnsafeBufferPointer(rebasing: p[start..<(i - 1)]), as: UTF8.self)
            }
            return try decodedString(start..<(i - 1))
        }

        mutating func value(depth: Int) throws(Failure) {
            guard depth < JSONCheck.maxDepth, i < p.count else { throw Failure() }
            switch p[i] {
            case UInt8(ascii: "{"):
                i += 1
                skipSpace()
                if peek() == UInt8(ascii: "}") { i += 1; return }
                while true {
                    skipSpace()
                    guard peek() == UInt8(ascii: "\"") else { throw Failure() }
                    _ = try string()
                    skipSpace()
                    try expect(UInt8(ascii: ":"))
                    skipSpace()
                    try value(depth: depth + 1)
                    skipSpace()
                    if try comma(before: UInt8(ascii: "}")) { continue }
                    return
                }
            case UInt8(ascii: "["):
                i += 1
                skipSpace()
                if peek() == UInt8(ascii: "]") { i += 1; return }
                while true {
                    skipSpace()
                    try value(depth: depth + 1)
                    skipSpace()
                    if try comma(before: UInt8(ascii: "]")) { continue }
                    return
                }
            case UInt8(ascii: "\""):
                _ = try string()
            case UInt8(ascii: "t"):
                try literal("true")
            case UInt8(ascii: "f"):
                try literal("false")
            case UInt8(ascii: "n"):
                try literal("null")
            default:
                try number()
            }
        }

        /// Skips a string starting at its opening quote; returns whether it held an escape.
        mutating func string() throws(Failure) -> Bool {
            i += 1
            var hadEscape = false
            while i < p.count {
                let b = p[i]
                if b == UInt8(ascii: "\"") { i += 1; return hadEscape }
                if b < 0x20 { throw Failure() }
                if b == UInt8(ascii: "\\") {
                    hadEscape = true
                    i += 1
                    guard i < p.count else { throw Failure() }
                    switch p[i] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                         UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        i += 1
                    case UInt8(ascii: "u"):
                        i += 1
                        let unit = try hex4()
                        if unit >= 0xD800 && unit <= 0xDBFF {
                            // A high surrogate must be followed by an escaped low one.
                            guard i + 1 < p.count, p[i] == UInt8(ascii: "\\"), p[i + 1] == UInt8(ascii: "u") else { throw Failure() }
                            i += 2
                            let low = try hex4()
                            guard low >= 0xDC00 && low <= 0xDFFF else { throw Failure() }
                        } else if unit >= 0xDC00 && unit <= 0xDFFF {
                            throw Failure()
                        }
                    default:
                        throw Failure()
                    }
                    continue
                }
                i += 1
            }
            throw Failure()
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard i + 4 <= p.count else { throw Failure() }
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let d = Hex.value(p[i]) else { throw Failure() }
                v = v << 4 | UInt32(d)
                i += 1
            }
            return v
        }

        /// A string's content with its escapes resolved (already checked by `string()`).
        func decodedString(_ range: Range<Int>) throws(Failure) -> String {
            var scalars = String.UnicodeScalarView()
            var out: [UInt8] = []
            var j = range.lowerBound
            func flush() {
                if !out.isEmpty {
                    scalars.append(contentsOf: String(decoding: out, as: UTF8.self).unicodeScalars)
                    out.removeAll()
                }
            }
            func hexAt(_ k: Int) -> UInt32 {
                var v: UInt32 = 0
                for m in k..<(k + 4) {
                    let b = p[m]
                    let d = b <= UInt8(ascii: "9") ? b - UInt8(ascii: "0") : (b | 0x20) - UInt8(ascii: "a") + 10
                    v = v << 4 | UInt32(d)
                }
                return v
            }
            while j < range.upperBound {
                let b = p[j]
                guard b == UInt8(ascii: "\\") else { out.append(b); j += 1; continue }
                let e = p[j + 1]
                j += 2
                switch e {
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var unit = hexAt(j)
                    j += 4
                    if unit >= 0xD800 && unit <= 0xDBFF {
                        let low = hexAt(j + 2)
                        j += 6
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    flush()
                    guard let scalar = Unicode.Scalar(unit) else { throw Failure() }
                    scalars.append(scalar)
                default: out.append(e)  // \" \\ \/
                }
            }
            flush()
            return String(scalars)
        }

        mutating func number() throws(Failure) {
            if peek() == UInt8(ascii: "-") { i += 1 }
            guard let first = peek(), isDigit(first) else { throw Failure() }
            i += 1
            if first != UInt8(ascii: "0") { while let d = peek(), isDigit(d) { i += 1 } }
            if peek() == UInt8(ascii: ".") {
                i += 1
                guard let d = peek(), isDigit(d) else { throw Failure() }
                while let d = peek(), isDigit(d) { i += 1 }
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                i += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { i += 1 }
                guard let d = peek(), isDigit(d) else { throw Failure() }
                while let d = peek(), isDigit(d) { i += 1 }
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let n = word.utf8CodeUnitCount
            guard i + n <= p.count else { throw Failure() }
            let w = word.utf8Start
            for k in 0..<n where p[i + k] != w[k] { throw Failure() }
            i += n
        }

        /// After a member or element: true when another follows; false once `close` is consumed.
        /// A trailing comma before `close` is accepted, as JSONSerialization accepts it.
        mutating func comma(before close: UInt8) throws(Failure) -> Bool {
            if peek() == UInt8(ascii: ",") {
                i += 1
                skipSpace()
                if peek() != close { return true }
            }
            try expect(close)
            return false
        }

        mutating func expect(_ byte: UInt8) throws(Failure) {
            guard peek() == byte else { throw Failure() }
            i += 1
        }

        func peek() -> UInt8? { i < p.count ? p[i] : nil }

        mutating func skipSpace() {
            while i < p.count {
                switch p[i] {
                case 0x20, 0x09, 0x0A, 0x0D: i += 1
                default: return
                }
            }
        }

        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
    }
}
