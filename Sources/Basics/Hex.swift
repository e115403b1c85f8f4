/// Lower-case hex, the form of device tokens on Apple's `:path`, of token fingerprints and of
/// UUIDs.
package enum Hex {
    package static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The lower-case digit for `nibble` (0 to 15): what `digits[nibble]` holds, computed, so a
    /// loop writing many of them reads no global table.
    package static func digit(_ nibble: UInt8) -> UInt8 {
        nibble &+ (nibble < 10 ? UInt8(ascii: "0") : UInt8(ascii: "a") &- 10)
    }

    /// What one hex digit stands for, either case; nil for any other byte.
    package static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// `bytes` as lower-case hex, two digits a byte.
    package static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
