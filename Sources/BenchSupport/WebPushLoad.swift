import OpenSSLSupport
import WebPushCrypto
import Basics

// The load: Mastodon-shaped aesgcm WebPush messages, really encrypted, and the HTTP/1.1
// requests that carry them to the relay.

/// One encrypted message's worth of WebPush values; a few are made up front and reused, since
/// the relay copies them without decrypting (it never can).
package struct PushVariant: Sendable {
    /// `salt=` of the `Encryption` header: 16 bytes, base64url.
    package let salt: String
    /// `dh=` of `Crypto-Key`: the sender's 65-byte uncompressed P-256 point, base64url.
    package let dh: String
    /// The VAPID key Mastodon also puts in `Crypto-Key` (ignored by the relay).
    package let vapidKey: String
    /// The ciphertext: a real aesgcm record of a Mastodon notification, 300-500 bytes.
    package let body: [UInt8]

    /// Encrypts `count` Mastodon-like notifications (lengths spread over 300-500 bytes) for one
    /// throw-away subscription, exactly as Mastodon's aesgcm sender does.
    package static func make(count: Int) throws -> [PushVariant] {
        let receiver = try P256KeyAgreement.generate()
        let authSecret = randomBytes(16)
        let vapidKey = Base64URL.encode([4] + randomBytes(64))
        return try (0..<count).map { i in
            let message = mastodonNotification(number: i, length: 282 + (i * 57) % 183)
            let sealed = try WebPushEncryptor.aesgcm(plaintext: message, receiverPublicKey: receiver.publicKeyRaw,
                                                     authSecret: authSecret)
            return PushVariant(salt: sealed.salt, dh: sealed.dh, vapidKey: vapidKey, body: sealed.body)
        }
    }

    /// The JSON Mastodon encrypts for a notification, padded in its `body` to `length` bytes.
    private static func mastodonNotification(number: Int, length: Int) -> [UInt8] {
        let head = #"{"access_token":"\#(Base64URL.encode(randomBytes(32)))","preferred_locale":"en","notification_id":\#(1_000_000 + number),"notification_type":"mention","icon":"https://files.bench.example/accounts/avatars/000/000/001/original/a.png","title":"Alice mentioned you","body":""#
        let tail = #""}"#
        let filler = max(1, length - head.utf8.count - tail.utf8.count)
        let words = "@you the relay forwards this without reading it, as it must "
        let text = String(repeating: words, count: filler / words.count + 1).prefix(filler)
        return Array((head + text + tail).utf8)
    }
}

/// A random device token of 64 hex digits. The default prefix is one no emulator fault uses,
/// so every push is a plain success; a fault's prefix (`MockFaults.Prefix`) picks that fault.
package func makeDeviceToken(prefix: String = "a1b2") -> String {
    prefix + String(Hex.encode(randomBytes(32)).dropFirst(prefix.count))
}

/// Pre-built HTTP/1.1 requests for one client connection: only the push id changes between
/// requests, so making one is two copies and a few digits.
package struct WebPushRequestTemplate: Sendable {
    private let prefixes: [[UInt8]]
    private let suffixes: [[UInt8]]

    /// Whether each request goes to a device of its own (`write` puts the id's hex digits at the
    /// token's end): a relay holding pushes keeps at most HOLD_MAX_PER_DEVICE per device, so a
    /// load of many held pushes must spread them as Mastodon's fan-out does.
    private let tokenPerPush: Bool

    package init(token: String, host: String, variants: [PushVariant], tokenPerPush: Bool = false) {
        self.tokenPerPush = tokenPerPush
        // Mastodon signs with VAPID in `Authorization`; the relay ignores it, but it is part of the
        // bytes it must parse, so a token-sized value goes along.
        let vapid = "WebPush " + Base64URL.encode(randomBytes(36)) + "." + Base64URL.encode(randomBytes(90))
            + "." + Base64URL.encode(randomBytes(64))
        prefixes = variants.map { _ in Array("POST /push/\(tokenPerPush ? String(token.dropLast(16)) : token + "/")".utf8) }
        suffixes = variants.map { v in
            var head = " HTTP/1.1\r\n"
            head += "Host: \(host)\r\n"
            head += "User-Agent: Mastodon/4.3.2 (http.rb/5.2.0; +https://bench.example/)\r\n"
            head += "Content-Type: application/octet-stream\r\n"
            head += "Content-Encoding: aesgcm\r\n"
            head += "Encryption: salt=\(v.salt)\r\n"
            head += "Crypto-Key: dh=\(v.dh);p256ecdsa=\(v.vapidKey)\r\n"
            head += "Authorization: \(vapid)\r\n"
            head += "TTL: 172800\r\n"
            head += "Urgency: normal\r\n"
            head += "Content-Length: \(v.body.count)\r\n\r\n"
            return Array(head.utf8) + v.body
        }
    }

    /// Writes request `id` into `out` (cleared first, capacity kept).
    package func write(id: Int, into out: inout [UInt8]) {
        let v = id % prefixes.count
        out.removeAll(keepingCapacity: true)
        out.append(contentsOf: prefixes[v])
        if tokenPerPush {
            for shift in stride(from: 60, through: 0, by: -4) { out.append(Hex.digit(UInt8(truncatingIfNeeded: UInt64(id) >> UInt64(shift)) & 0x0f)) }
            out.append(UInt8(ascii: "/"))
        }
        DecimalText.append(id, to: &out)
        out.append(contentsOf: suffixes[v])
    }
}
