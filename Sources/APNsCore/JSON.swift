internal import Basics

/// A JSON value for the keys an app puts beside `aps`.
///
/// Written by hand with keys in sorted order so the same input always gives the same
/// bytes: tests can compare text, and the payload size we check is the size we send.
/// A plain enum because JSON itself will not grow new kinds of value.
public enum APNsJSON: Sendable, Hashable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null
    case array([APNsJSON])
    case object([String: APNsJSON])
}

extension APNsJSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: APNsJSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, APNsJSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

/// A small JSON writer: appends to one byte buffer, never builds intermediate strings.
struct JSONWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ value: String) {
        JSONString.appendQuoted(value, to: &bytes)
    }

    mutating func int<I: BinaryInteger>(_ value: I) { bytes.append(contentsOf: String(value).utf8) }

    mutating func double(_ value: Double) throws(APNsError) {
        guard value.isFinite else { throw .invalid("JSON has no way to write \(value); use a finite number") }
        if value == value.rounded(), abs(value) < 1e15 {
            int(Int64(value))
        } else {
            bytes.append(contentsOf: "\(value)".utf8)
        }
    }

    mutating func key(_ name: String, first: inout Bool) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func value(_ value: APNsJSON) throws(APNsError) {
        switch value {
        case .string(let s): string(s)
        case .int(let i): int(i)
        case .double(let d): try double(d)
        case .bool(let b): b ? raw("true") : raw("false")
        case .null: raw("null")
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                try self.value(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            try self.members(members)
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `"k":v` pairs in sorted key order, without braces, so callers can add keys before them.
    mutating func members(_ members: [String: APNsJSON], first: inout Bool) throws(APNsError) {
        for name in members.keys.sorted() {
            key(name, first: &first)
            try value(members[name]!)
        }
    }

    mutating func members(_ members: [String: APNsJSON]) throws(APNsError) {
        var first = true
        try self.members(members, first: &first)
    }

    mutating func stringArray(_ items: [String]) {
        bytes.append(UInt8(ascii: "["))
        for (index, item) in items.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(item)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}

extension APNsJSON {
    /// Reads one JSON text (RFC 8259) into a value, with the leniencies Foundation's `JSONDecoder`
    /// had when it read these values: a leading UTF-8 byte order mark, a trailing comma in an
    /// array or object, nesting at most 512 deep; a duplicate key keeps its first value. A number
    /// that is a whole value and fits `Int` is `.int` (`1.0`, `1e2`), another `.double`; one
    /// beyond `Double`'s range (`1e400`) makes the text not JSON; digits alone too many for `Int`
    /// are `.double`. Nil when it is not JSON.
    package static func parse(_ bytes: [UInt8]) -> APNsJSON? {
        if !bytes.allSatisfy({ $0 < 0x80 }) {
            guard String(validating: bytes, as: UTF8.self) != nil else { return nil }
        }
        return bytes.withUnsafeBufferPointer { p -> APNsJSON? in
            var scanner = JSONCheck.Scanner(p: p)
            if p.count >= 3, p[0] == 0xEF, p[1] == 0xBB, p[2] == 0xBF { scanner.i = 3 }
            do {
                scanner.skipSpace()
                let value = try scanner.parsedValue(depth: 0)
                scanner.skipSpace()
                guard scanner.i == p.count else { return Optional<APNsJSON>.none }
                return value
            } catch {
                return nil
            }
        }
    }

    /// `parse` of a string's UTF-8.
    package static func parse(_ text: String) -> APNsJSON? { parse(Array(text.utf8)) }
}

extension JSONCheck.Scanner {
    /// The value at `i`, built; the same grammar as `value(depth:)`, which only skips.
    mutating func parsedValue(depth: Int) throws(JSONCheck.Failure) -> APNsJSON {
        guard depth < JSONCheck.maxDepth, i < p.count else { throw JSONCheck.Failure() }
        switch p[i] {
        case UInt8(ascii: "{"):
            i += 1
            var members: [String: APNsJSON] = [:]
            skipSpace()
            if peek() == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                let name = try key()
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                let member = try parsedValue(depth: depth + 1)
                if members[name] == nil { members[name] = member }
                skipSpace()
                if try comma(before: UInt8(ascii: "}")) { continue }
                return .object(members)
            }
        case UInt8(ascii: "["):
            i += 1
            var items: [APNsJSON] = []
            skipSpace()
            if peek() == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try parsedValue(depth: depth + 1))
                skipSpace()
                if try comma(before: UInt8(ascii: "]")) { continue }
                return .array(items)
            }
        case UInt8(ascii: "\""):
            return .string(try key())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default:
            let start = i
            try number()
            let digits = UnsafeBufferPointer(rebasing: p[start..<i])
            let text = String(decoding: digits, as: UTF8.self)
            guard let value = Double(text), value.isFinite else { throw JSONCheck.Failure() }
            // Digits alone are an int when they fit; with a fraction or exponent, when the value is whole.
            let plainInteger = !digits.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
            if plainInteger { return Int(text).map(APNsJSON.int) ?? .double(value) }
            // Below 2^63 in magnitude, as JSONDecoder had it (so -2^63 written with a fraction stays a double).
            guard value.magnitude < 0x1p63, let whole = Int(exactly: value) else { return .double(value) }
            return .int(whole)
        }
    }
}
