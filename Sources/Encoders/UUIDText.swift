#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Random (version 4) UUIDs and their lower-case text: every push gets one as its `apns-id`, and
/// every request without `X-Request-ID` one as its id. Made by hand because Foundation's `UUID()`
/// on Linux opens, reads and closes /dev/urandom for each one, and `uuidString.lowercased()`
/// makes two strings through printf.
package enum UUIDText {
    /// A random UUID, its bytes from `RandomBytes` (one getrandom call per 256 UUIDs).
    package static func random(using source: RandomBytes = .shared) -> UUID {
        var words = source.words()
        return withUnsafeMutableBytes(of: &words) { bytes in
            bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
            bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
            return UUID(uuid: bytes.load(as: uuid_t.self))
        }
    }

    /// `uuid.uuidString.lowercased()`, written straight into the string's storage.
    package static func lowercase(_ uuid: UUID) -> String {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for (i, b) in bytes.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                    out[o] = Hex.digits[Int(b >> 4)]
                    out[o + 1] = Hex.digits[Int(b & 0x0f)]
                    o += 2
                }
                return o
            }
        }
    }

    /// A random UUID's lower-case text.
    package static func randomLowercase() -> String { lowercase(random()) }
}
