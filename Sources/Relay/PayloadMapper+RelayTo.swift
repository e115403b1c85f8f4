import Basics
import WebPush

extension PayloadMapper {
    /// toot-relay's alert text; the apps of that family replace it once they have decrypted.
    package static let defaultRelayToAlert = "🎺"

    /// Builds the plan for one message of the `/relay-to` route, byte-compatible with what
    /// toot-relay and webpush-apn-relay send, so their apps decode it unchanged:
    ///
    ///     {"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":…,"x":…,"k":…,"s":…}
    ///
    /// `p` is the whole body in `Z85`; `x` the extra path, only when there is one; for aesgcm
    /// `k` and `s` are the bytes of `dh` and `salt` in `Z85` (what those apps decode, not the
    /// base64url as sent); for aes128gcm there is no `k`/`s` (the body carries both) and `e`
    /// says so. A message too big for `maxPayloadBytes` goes out degraded: the same `aps` and
    /// `x`, without `p`/`k`/`s`/`e`. The route caps `extra` at `PushRoute.maxIDBytes`, so the
    /// degraded form fits whenever `alert` is a sane configuration value.
    package static func relayToPlan(message: WebPushMessage, extra: String?, alert: String = defaultRelayToAlert,
                                   now: Int) -> APNsPushPlan {
        let head = Array(#"{"aps":{"alert":""#.utf8)
        let afterAlert = Array(#"","mutable-content":1,"content-available":1}"#.utf8)
        var baseSize = head.count + JSONString.escapedCount(alert) + afterAlert.count + 1  // the closing `}`
        if let extra { baseSize += #","x":""#.utf8.count + JSONString.escapedCount(extra) + 1 }

        var salt: [UInt8]?
        var dh: [UInt8]?
        if message.encoding == .aesgcm {
            salt = message.saltBytes
            dh = message.dhBytes
        }
        // The full form's size, computed before anything is written.
        var fullSize = baseSize + #","p":""#.utf8.count + Z85.encodedCount(message.body.count) + 1
        if let dh { fullSize += #","k":""#.utf8.count + Z85.encodedCount(dh.count) + 1 }
        if let salt { fullSize += #","s":""#.utf8.count + Z85.encodedCount(salt.count) + 1 }
        if message.encoding == .aes128gcm { fullSize += #","e":""#.utf8.count + message.encoding.rawValue.utf8.count + 1 }

        let degraded = fullSize > maxPayloadBytes
        var out: [UInt8] = []
        out.reserveCapacity(degraded ? baseSize : fullSize)
        out.append(contentsOf: head)
        JSONString.appendEscaped(alert, to: &out)
        out.append(contentsOf: afterAlert)
        if !degraded {
            out.append(contentsOf: #","p":""#.utf8)
            Z85.append(message.body, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        if let extra {
            out.append(contentsOf: #","x":""#.utf8)
            JSONString.appendEscaped(extra, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        if !degraded {
            if let dh {
                out.append(contentsOf: #","k":""#.utf8)
                Z85.append(dh, to: &out)
                out.append(UInt8(ascii: "\""))
            }
            if let salt {
                out.append(contentsOf: #","s":""#.utf8)
                Z85.append(salt, to: &out)
                out.append(UInt8(ascii: "\""))
            }
            if message.encoding == .aes128gcm {
                out.append(contentsOf: #","e":""#.utf8)
                out.append(contentsOf: message.encoding.rawValue.utf8)
                out.append(UInt8(ascii: "\""))
            }
        }
        out.append(UInt8(ascii: "}"))
        return plan(payload: out, degraded: degraded, fullSize: fullSize, message: message, now: now)
    }
}
