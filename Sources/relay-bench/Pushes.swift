import BenchSupport
import Basics

// The ceiling phase's side of the load: push ids, and the APNs bodies the relay would make.

/// The push id of request `sequence` on connection `connection` (unique within a run).
@inline(__always)
func pushID(connection: Int, sequence: Int) -> Int {
    connection &* 100_000_000 &+ sequence
}

/// The APNs body the relay makes of a variant (docs/ARCHITECTURE.md §5), split around the push id.
struct APNsPayloadTemplate {
    private let prefix: [UInt8]
    private let suffixes: [[UInt8]]

    init(variants: [PushVariant]) {
        prefix = Array(#"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":""#.utf8)
        suffixes = variants.map { v in
            Array(#"","m":"\#(Base64URL.encode(v.body, padded: true))","s":"\#(v.salt)","k":"\#(v.dh)","e":"aesgcm"}"#.utf8)
        }
    }

    func payload(id: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(prefix.count + 20 + suffixes[0].count)
        out.append(contentsOf: prefix)
        DecimalText.append(id, to: &out)
        out.append(contentsOf: suffixes[id % suffixes.count])
        return out
    }
}
