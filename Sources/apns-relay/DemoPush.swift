#if canImport(Glibc)
import Glibc
#endif
import Relay
import APNs
import WebPushCrypto
import Basics

/// A Mastodon-shaped aesgcm WebPush request: what a Sidekiq worker posts to the relay.
///
/// The body is really encrypted (WebPushCrypto, the legacy aesgcm coding Mastodon sends by
/// default) for a throw-away subscription key, so the demo can also play the device and
/// decrypt what reached "Apple".
struct DemoPush: Sendable {
    /// The URL the app registered: metatext-apns's, or toot-relay's for Toot! and the Mastodon app.
    enum Route: String, Sendable, CaseIterable {
        case push
        case relayTo = "relay-to"

        /// The payload keys the app's extension decrypts, for the demo's printout.
        var encryptedKeys: String { self == .push ? "m/s/k/e" : "p/k/s" }
    }

    var route: Route
    var deviceToken: String
    var id: String
    var body: [UInt8]
    var headers: [(String, String)]
    /// The subscription's private half: what the app's notification service extension holds.
    var device: WebPushDecryptor

    /// On `/relay-to` the id travels as the extra path, and comes back to the app as `x`.
    var target: String {
        switch route {
        case .push: "/push/\(deviceToken)/\(id)"
        case .relayTo: "/relay-to/production/\(deviceToken)/\(id)"
        }
    }

    /// Mastodon's notification JSON, shortened.
    static let plaintext = #"{"access_token":"demo","preferred_locale":"en","notification_id":"1","notification_type":"mention","icon":"https://example.social/avatar.png","title":"Alice mentioned you","body":"@you hello from the apns-relay demo"}"#

    static func make(route: Route = .push, deviceToken: String = DemoPush.randomHex(bytes: 32),
                     id: String = "demo-subscription-1") throws -> DemoPush {
        let device = try WebPushDecryptor.generate()
        let sealed = try WebPushEncryptor.aesgcm(plaintext: Array(plaintext.utf8), receiverPublicKey: device.publicKey,
                                                 authSecret: device.authSecret, padding: 16)
        var vapid = randomBytes(65)
        vapid[0] = 0x04
        return DemoPush(
            route: route, deviceToken: deviceToken, id: id, body: sealed.body,
            headers: [
                ("Content-Encoding", "aesgcm"),
                ("Encryption", "salt=\(sealed.salt)"),
                ("Crypto-Key", "dh=\(sealed.dh);p256ecdsa=\(Base64URL.encode(vapid))"),
                ("TTL", "172800"),
                ("Urgency", "normal"),
                ("Topic", "mention"),
            ],
            device: device)
    }

    /// What the app's extension would show: the payload's `m`/`s`/`k`/`e` (or, on `/relay-to`,
    /// the Z85 `p`/`k`/`s`) decrypted with the subscription key, or why it could not.
    func decrypt(payload: [UInt8]) -> String {
        guard let object = Fields(payload) else { return "(the payload is not a JSON object)" }
        do {
            let plain: [UInt8]
            if let m = object.m {
                plain = try device.decrypt(m: m, s: object.s, k: object.k, e: object.e)
            } else if let p = object.p {
                plain = try decryptRelayTo(p: p, k: object.k, s: object.s)
            } else {
                return "(no m or p in the payload: the degraded form, the app shows its fallback alert)"
            }
            return String(decoding: plain, as: UTF8.self)
        } catch {
            return "(the device could not decrypt it: \(error))"
        }
    }

    /// The payload's string fields the device reads; nil when the payload is not a JSON object
    /// or one of them is there but not a string.
    private struct Fields {
        var m: String?, p: String?, s: String?, k: String?, e: String?

        init?(_ payload: [UInt8]) {
            guard case .object(let members)? = APNsJSON.parse(payload) else { return nil }
            func field(_ name: String) -> String?? {
                switch members[name] {
                case nil, .null?: return .some(nil)
                case .string(let text)?: return .some(text)
                default: return nil
                }
            }
            guard let m = field("m"), let p = field("p"), let s = field("s"), let k = field("k"), let e = field("e") else { return nil }
            self.m = m; self.p = p; self.s = s; self.k = k; self.e = e
        }
    }

    /// What Toot! and the Mastodon app do: `p`, `k` and `s` are Z85 bytes; with `k` and `s`
    /// the body is aesgcm, without them aes128gcm (its header holds both).
    private func decryptRelayTo(p: String, k: String?, s: String?) throws -> [UInt8] {
        struct NotZ85: Error, CustomStringConvertible {
            var key: String
            var description: String { "\"\(key)\" is not Z85" }
        }
        guard let body = Z85.decode(p) else { throw NotZ85(key: "p") }
        guard let k, let s else { return try device.decryptAES128GCM(body: body) }
        guard let dh = Z85.decode(k) else { throw NotZ85(key: "k") }
        guard let salt = Z85.decode(s) else { throw NotZ85(key: "s") }
        return try device.decryptAESGCM(body: body, salt: salt, senderPublicKey: dh)
    }

    /// A command a user can paste: the body travels as base64 so no file is needed.
    func curl(port: Int) -> String {
        var lines = ["echo '\(Self.base64(body))' | base64 -d | \\",
                     "  curl -sS -i -X POST --data-binary @- \\"]
        for (name, value) in headers { lines.append("  -H '\(name): \(value)' \\") }
        lines.append("  'http://127.0.0.1:\(port)\(target)'")
        return lines.joined(separator: "\n")
    }

    /// Standard base64 with padding (RFC 4648 §4), what `base64 -d` reads: base64url's two
    /// extra characters swapped back.
    static func base64(_ bytes: [UInt8]) -> String {
        var text: [UInt8] = []
        Base64URL.append(bytes, padded: true, to: &text)
        for i in text.indices {
            if text[i] == UInt8(ascii: "-") { text[i] = UInt8(ascii: "+") } else if text[i] == UInt8(ascii: "_") { text[i] = UInt8(ascii: "/") }
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    static func randomHex(bytes: Int) -> String {
        randomBytes(bytes).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
