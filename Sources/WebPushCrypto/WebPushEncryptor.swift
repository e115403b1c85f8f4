internal import Basics

/// What a WebPush sender such as Mastodon does to a notification before posting it: the
/// demo and benchmark need real encrypted bodies, not random bytes, so that what the relay
/// forwards can be shown to decrypt on the device.
package enum WebPushEncryptor {
    /// Encrypts one message with RFC 8291 (`Content-Encoding: aes128gcm`).
    ///
    /// - Parameters:
    ///   - receiverPublicKey: the subscription's `p256dh`, 65 bytes uncompressed.
    ///   - authSecret: the subscription's `auth`, 16 bytes.
    ///   - senderKey: the ephemeral key; `nil` makes a fresh one, as every message must.
    ///     Pass one only to reproduce a test vector.
    ///   - salt: 16 bytes; `nil` draws a random one. Reusing a salt with the same keys
    ///     reuses the AES key and nonce, which breaks GCM.
    ///   - recordSize: written in the header; WebPush allows a single record, so the
    ///     message must fit in it with its delimiter and tag.
    ///   - padding: extra zero bytes after the delimiter, hiding the plaintext's length.
    /// - Returns: the whole body: salt ‖ rs ‖ idlen ‖ sender key ‖ one record.
    package static func aes128gcm(plaintext: [UInt8], receiverPublicKey: [UInt8], authSecret: [UInt8],
                                 senderKey: P256KeyAgreement? = nil, salt: [UInt8]? = nil,
                                 recordSize: UInt32 = 4096, padding: Int = 0) throws -> [UInt8] {
        try checkAuthSecret(authSecret)
        guard recordSize >= 18 else {
            throw WebPushCryptoError(.invalidParameter, "the record size must be at least 18 (one byte, the delimiter and the tag), not \(recordSize)")
        }
        guard padding >= 0 else {
            throw WebPushCryptoError(.invalidParameter, "padding cannot be negative (\(padding))")
        }
        let recordLength = plaintext.count + 1 + padding + AESGCM.tagLength
        guard recordLength <= Int(recordSize) else {
            throw WebPushCryptoError(.messageTooLarge, "\(plaintext.count) bytes plus \(padding) of padding need a \(recordLength)-byte record, over the record size \(recordSize); WebPush sends a single record, so shorten the message or raise recordSize")
        }
        let (sender, salt, secret) = try prepare(receiverPublicKey: receiverPublicKey, senderKey: senderKey, salt: salt)
        let schedule = try mapCrypto("deriving the aes128gcm keys") {
            try KeySchedule.aes128gcm(ecdhSecret: secret, authSecret: authSecret, receiverPublic: receiverPublicKey,
                                      senderPublic: sender.publicKeyRaw, salt: salt)
        }
        var record = plaintext
        record.append(0x02)  // the last (and only) record's delimiter
        record += repeatElement(0, count: padding)
        let sealed = try mapCrypto("encrypting the record") {
            try AESGCM.seal(key: schedule.key, nonce: schedule.nonce(forRecord: 0), plaintext: record)
        }
        var body = salt
        body += [UInt8(recordSize >> 24 & 0xff), UInt8(recordSize >> 16 & 0xff), UInt8(recordSize >> 8 & 0xff), UInt8(recordSize & 0xff)]
        body.append(UInt8(sender.publicKeyRaw.count))
        body += sender.publicKeyRaw
        body += sealed
        return body
    }

    /// Encrypts one message with the legacy `aesgcm` coding, the one Mastodon sends by
    /// default, so the demo exercises the relay's most common input.
    ///
    /// - Parameters: as for `aes128gcm`; `padding` (at most 65535) goes after the 2-byte
    ///   padding length at the start of the record.
    /// - Returns: the body (one record of at most 4096 bytes before the tag), and the
    ///   unpadded base64url values for the `Encryption: salt=` and `Crypto-Key: dh=` headers.
    package static func aesgcm(plaintext: [UInt8], receiverPublicKey: [UInt8], authSecret: [UInt8],
                              senderKey: P256KeyAgreement? = nil, salt: [UInt8]? = nil,
                              padding: Int = 0) throws -> (body: [UInt8], salt: String, dh: String) {
        try checkAuthSecret(authSecret)
        guard padding >= 0, padding <= 0xffff else {
            throw WebPushCryptoError(.invalidParameter, "aesgcm padding is 0 to 65535 bytes, not \(padding)")
        }
        let recordLength = 2 + padding + plaintext.count
        // A record as long as the default record size would need an empty record after it.
        guard recordLength < aesgcmRecordSize else {
            throw WebPushCryptoError(.messageTooLarge, "\(plaintext.count) bytes plus \(padding) of padding need a \(recordLength)-byte record; aesgcm receivers expect one record under \(aesgcmRecordSize) bytes, so shorten the message")
        }
        let (sender, salt, secret) = try prepare(receiverPublicKey: receiverPublicKey, senderKey: senderKey, salt: salt)
        let schedule = try mapCrypto("deriving the aesgcm keys") {
            try KeySchedule.aesgcm(ecdhSecret: secret, authSecret: authSecret, receiverPublic: receiverPublicKey,
                                   senderPublic: sender.publicKeyRaw, salt: salt)
        }
        var record: [UInt8] = [UInt8(padding >> 8), UInt8(padding & 0xff)]
        record += repeatElement(0, count: padding)
        record += plaintext
        let sealed = try mapCrypto("encrypting the record") {
            try AESGCM.seal(key: schedule.key, nonce: schedule.nonce(forRecord: 0), plaintext: record)
        }
        return (sealed, Base64URL.encode(salt), Base64URL.encode(sender.publicKeyRaw))
    }

    /// The record size aesgcm receivers assume when `Encryption` carries no `rs=`.
    package static let aesgcmRecordSize = 4096

    private static func checkAuthSecret(_ authSecret: [UInt8]) throws {
        guard authSecret.count == 16 else {
            throw WebPushCryptoError(.invalidParameter, "the auth secret is 16 bytes (the subscription's \"auth\"), not \(authSecret.count)")
        }
    }

    private static func prepare(receiverPublicKey: [UInt8], senderKey: P256KeyAgreement?,
                                salt: [UInt8]?) throws -> (P256KeyAgreement, [UInt8], [UInt8]) {
        if let salt, salt.count != 16 {
            throw WebPushCryptoError(.invalidParameter, "the salt is 16 bytes, not \(salt.count)")
        }
        let sender = try mapCrypto("making the sender key") { try senderKey ?? P256KeyAgreement.generate() }
        let salt = try mapCrypto("drawing the salt") { try salt ?? SecureRandom.bytes(16) }
        let secret = try mapCrypto("the receiver public key (p256dh)") { try sender.sharedSecret(with: receiverPublicKey) }
        return (sender, salt, secret)
    }
}
