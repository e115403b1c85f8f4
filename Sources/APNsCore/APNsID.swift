internal import Basics

/// An `apns-id`: the UUID a push carries so that Apple's answer and Apple's delivery logs can be
/// matched to it. Pass one in `APNsPushOptions.apnsID` to choose it; otherwise each push gets a
/// random (version 4) one.
public struct APNsID: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    /// The 16 bytes in order, as two words loaded from memory.
    private let first: UInt64
    private let second: UInt64

    private init(_ bytes: UUIDText.Bytes) { first = bytes.0; second = bytes.1 }

    /// Reads a UUID's text, `8-4-4-4-12` hex digits in either case
    /// (`"2B4E5B8A-0C1D-4E2F-9A3B-4C5D6E7F8091"`); nil for anything else.
    public init?(_ text: String) {
        guard let bytes = UUIDText.parse(text) else { return nil }
        self.init(bytes)
    }

    /// Exactly 16 bytes, in the UUID's order; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        var words: UUIDText.Bytes = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: bytes) }
        self.init(words)
    }

    /// A fresh random (version 4) id.
    public static func random() -> APNsID { APNsID(UUIDText.random()) }

    /// The 16 bytes, in the UUID's order.
    public var bytes: [UInt8] { withUnsafeBytes(of: (first, second)) { Array($0) } }

    /// The canonical lower-case text, as sent in the `apns-id` header: `2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091`.
    public var description: String { UUIDText.lowercase((first, second)) }
}
