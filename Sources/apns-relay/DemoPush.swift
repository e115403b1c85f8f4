#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import WebPushCrypto

/// A Mastodon-shaped aesgcm WebPush request: what a Sidekiq worker posts to the relay.
///
/// The body is really encrypted (WebPushCrypto, the legacy aesgcm coding Mastodon sends by
/// default) for a throw-away subscription key, so the demo can also play the device and
/// decrypt what reached "Apple".
struct DemoPush: Sendable {
    var deviceToken: String
    var id: String
    var body: [UInt8]
    var headers: [(String, String)]
    /// The subscription's private half: what the app's notification service extension holds.
    var device: WebPushDecryptor

    var target: String { "/push/\(deviceToken)/\(id)" }

    /// Mastodon's notification JSON, shortened.
    static let plaintext = #"{"access_token":"demo","preferred_locale":"en","notification_id":"1","notification_type":"mention","icon":"https://example.social/avatar.png","title":"Alice mentioned you","body":"@you hello from the apns-relay demo"}"#

    static func make(deviceToken: String = DemoPush.randomHex(bytes: 32), id: String = "demo-subscription-1") throws -> DemoPush {
        let device = try WebPushDecryptor.generate()
        let sealed = try WebPushEncryptor.aesgcm(plaintext: Array(plaintext.utf8), receiverPublicKey: device.publicKey,
                                                 authSecret: device.authSecret, padding: 16)
        var vapid = randomBytes(65)
        vapid[0] = 0x04
        return DemoPush(
            deviceToken: deviceToken, id: id, body: sealed.body,
            headers: [
                ("Content-Encoding", "aesgcm"),
                ("Encryption", "salt=\(sealed.salt)"),
                ("Crypto-Key", "dh=\(sealed.dh);p256ecdsa=\(WebPushBase64.encode(vapid))"),
                ("TTL", "172800"),
                ("Urgency", "normal"),
                ("Topic", "mention"),
            ],
            device: device)
    }

    /// What the app's extension would show: the payload's `m`/`s`/`k`/`e` decrypted with the
    /// subscription key, or why it could not.
    func decrypt(payload: [UInt8]) -> String {
        struct Fields: Decodable { var m: String?; var s: String?; var k: String?; var e: String? }
        guard let object = try? JSONDecoder().decode(Fields.self, from: Data(payload)), let m = object.m
        else { return "(no m in the payload: the degraded form, the app shows its fallback alert)" }
        do {
            let plain = try device.decrypt(m: m, s: object.s, k: object.k, e: object.e)
            return String(decoding: plain, as: UTF8.self)
        } catch {
            return "(the device could not decrypt it: \(error))"
        }
    }

    /// A command a user can paste: the body travels as base64 so no file is needed.
    func curl(port: Int) -> String {
        var lines = ["echo '\(Data(body).base64EncodedString())' | base64 -d | \\",
                     "  curl -sS -i -X POST --data-binary @- \\"]
        for (name, value) in headers { lines.append("  -H '\(name): \(value)' \\") }
        lines.append("  'http://127.0.0.1:\(port)\(target)'")
        return lines.joined(separator: "\n")
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    static func randomHex(bytes: Int) -> String {
        randomBytes(bytes).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
