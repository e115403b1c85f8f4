import Foundation

/// A Mastodon-shaped aesgcm WebPush request: what a Sidekiq worker posts to the relay.
///
/// The body is random bytes of a realistic size with a valid salt and an uncompressed P-256
/// point as `dh`: the relay never decrypts, so this exercises exactly the path a real push
/// takes (and the device would show the fallback alert).
struct DemoPush {
    var deviceToken: String
    var id: String
    var body: [UInt8]
    var headers: [(String, String)]

    var target: String { "/push/\(deviceToken)/\(id)" }

    static func make(deviceToken: String = DemoPush.randomHex(bytes: 32), id: String = "demo-subscription-1") -> DemoPush {
        let salt = randomBytes(16)
        var dh = randomBytes(65)
        dh[0] = 0x04
        let vapid = randomBytes(65).enumerated().map { $0.offset == 0 ? UInt8(0x04) : $0.element }
        // Mastodon's aesgcm bodies: a 2-byte padding length, padding, the JSON, a 16-byte tag.
        let body = randomBytes(2 + 180 + 16)
        return DemoPush(
            deviceToken: deviceToken, id: id, body: body,
            headers: [
                ("Content-Encoding", "aesgcm"),
                ("Encryption", "salt=\(base64URL(salt))"),
                ("Crypto-Key", "dh=\(base64URL(dh));p256ecdsa=\(base64URL(vapid))"),
                ("TTL", "172800"),
                ("Urgency", "normal"),
                ("Topic", "mention"),
            ])
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
        randomBytes(bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// Unpadded base64url, as Mastodon writes salt and keys.
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
