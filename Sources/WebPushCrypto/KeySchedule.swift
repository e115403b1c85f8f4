
/// The content-encryption key and base nonce of one message, derived the same way by the
/// sender and the receiver, so the derivation lives in one place.
struct KeySchedule {
    let key: [UInt8]
    let nonce: [UInt8]

    /// RFC 8291 section 3.4 then RFC 8188 section 2.2.
    static func aes128gcm(ecdhSecret: [UInt8], authSecret: [UInt8], receiverPublic: [UInt8],
                          senderPublic: [UInt8], salt: [UInt8]) throws -> KeySchedule {
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiverPublic + senderPublic
        let ikm = try HKDF.deriveKey(ikm: ecdhSecret, salt: authSecret, info: keyInfo, length: 32)
        let prk = try HKDF.extract(salt: salt, ikm: ikm)
        return KeySchedule(
            key: try HKDF.expand(prk: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16),
            nonce: try HKDF.expand(prk: prk, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12))
    }

    /// draft-ietf-webpush-encryption-04 section 3.3 with draft-ietf-httpbis-encryption-encoding-03
    /// section 4.2: the auth secret is mixed in with its own info string, and both public
    /// keys enter the key and nonce infos as a length-prefixed "P-256" context.
    static func aesgcm(ecdhSecret: [UInt8], authSecret: [UInt8], receiverPublic: [UInt8],
                       senderPublic: [UInt8], salt: [UInt8]) throws -> KeySchedule {
        let ikm = try HKDF.deriveKey(ikm: ecdhSecret, salt: authSecret,
                                     info: Array("Content-Encoding: auth".utf8) + [0], length: 32)
        let context = Array("P-256".utf8) + [0]
            + lengthPrefixed(receiverPublic) + lengthPrefixed(senderPublic)
        let prk = try HKDF.extract(salt: salt, ikm: ikm)
        return KeySchedule(
            key: try HKDF.expand(prk: prk, info: Array("Content-Encoding: aesgcm".utf8) + [0] + context, length: 16),
            nonce: try HKDF.expand(prk: prk, info: Array("Content-Encoding: nonce".utf8) + [0] + context, length: 12))
    }

    /// The nonce of record `sequence`: the base nonce XOR the sequence number, big-endian
    /// in the low bytes (RFC 8188 section 2.3; the aesgcm draft does the same).
    func nonce(forRecord sequence: Int) -> [UInt8] {
        var nonce = self.nonce
        var value = UInt64(sequence)
        for index in stride(from: 11, through: 4, by: -1) {
            nonce[index] ^= UInt8(value & 0xff)
            value >>= 8
        }
        return nonce
    }

    private static func lengthPrefixed(_ key: [UInt8]) -> [UInt8] {
        [UInt8(key.count >> 8 & 0xff), UInt8(key.count & 0xff)] + key
    }
}

/// Maps a primitive's failure to this module's error, keeping OpenSSL's reason.
func mapCrypto<R>(_ what: String, _ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let error as CryptoError {
        switch error.code {
        case .invalidKey:
            throw WebPushCryptoError(.invalidKey, "\(what): \(error.message)")
        case .authenticationFailed:
            throw WebPushCryptoError(.decryptionFailed, "\(what): \(error.message)")
        default:
            throw WebPushCryptoError(.invalidParameter, "\(what): \(error.message)")
        }
    }
}
