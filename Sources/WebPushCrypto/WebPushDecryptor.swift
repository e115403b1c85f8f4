internal import Basics
internal import WebPush

/// What an iOS notification service extension does with the relay's payload: it holds the
/// subscription's private key and auth secret and turns `m`, `s`, `k`, `e` back into the
/// notification. Tests use it to prove the relay forwards bytes that still decrypt.
package struct WebPushDecryptor: Sendable {
    /// The subscription key pair; its public half is the `p256dh` given to the server.
    package let privateKey: P256KeyAgreement
    /// The subscription's 16-byte `auth` secret.
    package let authSecret: [UInt8]

    package init(privateKey: P256KeyAgreement, authSecret: [UInt8]) throws {
        guard authSecret.count == 16 else {
            throw WebPushCryptoError(.invalidParameter, "the auth secret is 16 bytes, not \(authSecret.count)")
        }
        self.privateKey = privateKey
        self.authSecret = authSecret
    }

    /// New subscription keys, as a device makes when it registers with a server.
    package static func generate() throws -> WebPushDecryptor {
        try mapCrypto("making subscription keys") {
            try WebPushDecryptor(privateKey: P256KeyAgreement.generate(), authSecret: SecureRandom.bytes(16))
        }
    }

    /// The 65-byte public key to send the server as `p256dh`.
    package var publicKey: [UInt8] { privateKey.publicKeyRaw }

    /// Decrypts the fields of the relay's APNs payload.
    ///
    /// - Parameters:
    ///   - m: the body, base64url (padded or not).
    ///   - s: aesgcm's salt as the sender wrote it; `nil` for aes128gcm.
    ///   - k: aesgcm's sender key (`dh`); `nil` for aes128gcm.
    ///   - e: the content coding. Older relays omit it: then `s` and `k` mean aesgcm,
    ///     their absence aes128gcm.
    package func decrypt(m: String, s: String?, k: String?, e: String?) throws -> [UInt8] {
        let coding: WebPushEncoding
        if let e {
            guard let known = WebPushEncoding(rawValue: e.lowercased()) else {
                throw WebPushCryptoError(.unsupportedEncoding, "\"e\" is \"\(e)\"; only aes128gcm and aesgcm exist")
            }
            coding = known
        } else {
            coding = s != nil && k != nil ? .aesgcm : .aes128gcm
        }
        guard let body = Base64URL.decode(m) else {
            throw WebPushCryptoError(.badBase64, "\"m\" is not base64url")
        }
        switch coding {
        case .aes128gcm:
            return try decryptAES128GCM(body: body)
        case .aesgcm:
            guard let s, let k else {
                throw WebPushCryptoError(.badHeader, "an aesgcm message needs \"s\" (salt) and \"k\" (dh); the sender's Encryption or Crypto-Key header was lost")
            }
            guard let salt = Base64URL.decode(s) else {
                throw WebPushCryptoError(.badBase64, "\"s\" is not base64url")
            }
            guard let dh = Base64URL.decode(k) else {
                throw WebPushCryptoError(.badBase64, "\"k\" is not base64url")
            }
            return try decryptAESGCM(body: body, salt: salt, senderPublicKey: dh)
        }
    }

    /// Decrypts an RFC 8291 body (header included), checking every record's tag and its
    /// delimiter, so a truncated or reordered message is refused rather than shown.
    package func decryptAES128GCM(body: [UInt8]) throws -> [UInt8] {
        guard body.count >= 21 else {
            throw WebPushCryptoError(.badHeader, "an aes128gcm body starts with a 21-byte header; this one has \(body.count) bytes")
        }
        let salt = Array(body[0..<16])
        let recordSize = Int(body[16]) << 24 | Int(body[17]) << 16 | Int(body[18]) << 8 | Int(body[19])
        let idLength = Int(body[20])
        guard recordSize >= 18 else {
            throw WebPushCryptoError(.badHeader, "the header's record size \(recordSize) is below the minimum of 18")
        }
        guard idLength == 65, body.count >= 21 + idLength else {
            throw WebPushCryptoError(.badHeader, "the key id must be the sender's 65-byte public key; it is \(idLength) bytes in a \(body.count)-byte body")
        }
        let sender = Array(body[21..<(21 + idLength)])
        let schedule = try schedule(.aes128gcm, senderPublicKey: sender, salt: salt)
        let records = Array(body[(21 + idLength)...])
        guard !records.isEmpty else {
            throw WebPushCryptoError(.badPadding, "the body has a header but no record: it was truncated")
        }
        var plaintext: [UInt8] = []
        var start = 0
        var sequence = 0
        while start < records.count {
            let end = min(start + recordSize, records.count)
            let isLast = end == records.count
            var record = try open(Array(records[start..<end]), schedule: schedule, sequence: sequence)
            // Strip the zero padding, then the delimiter: 2 ends the message, 1 continues it.
            while let last = record.last, last == 0 { record.removeLast() }
            guard let delimiter = record.popLast() else {
                throw WebPushCryptoError(.badPadding, "record \(sequence) is all padding, with no delimiter")
            }
            guard delimiter == (isLast ? 2 : 1) else {
                throw WebPushCryptoError(.badPadding, isLast && delimiter == 1
                    ? "the last record says more follow: the message was truncated"
                    : "record \(sequence) has delimiter \(delimiter) where \(isLast ? 2 : 1) belongs")
            }
            plaintext += record
            start = end
            sequence += 1
        }
        return plaintext
    }

    /// Decrypts an `aesgcm` body given the `Encryption` salt and the `Crypto-Key` dh.
    /// `recordSize` is the `rs=` parameter when the sender gave one (Mastodon does not).
    package func decryptAESGCM(body: [UInt8], salt: [UInt8], senderPublicKey: [UInt8],
                              recordSize: Int = WebPushEncryptor.aesgcmRecordSize) throws -> [UInt8] {
        guard salt.count == 16 else {
            throw WebPushCryptoError(.invalidParameter, "the salt is 16 bytes, not \(salt.count)")
        }
        guard recordSize >= 2 else {
            throw WebPushCryptoError(.invalidParameter, "an aesgcm record size is at least 2 (the padding length), not \(recordSize)")
        }
        guard !body.isEmpty else {
            throw WebPushCryptoError(.badPadding, "the body is empty: there is no record to decrypt")
        }
        let schedule = try schedule(.aesgcm, senderPublicKey: senderPublicKey, salt: salt)
        let sealedSize = recordSize + AESGCM.tagLength
        var plaintext: [UInt8] = []
        var start = 0
        var sequence = 0
        while start < body.count {
            let end = min(start + sealedSize, body.count)
            let record = try open(Array(body[start..<end]), schedule: schedule, sequence: sequence)
            guard record.count >= 2 else {
                throw WebPushCryptoError(.badPadding, "record \(sequence) is shorter than its 2-byte padding length")
            }
            let padding = Int(record[0]) << 8 | Int(record[1])
            guard 2 + padding <= record.count else {
                throw WebPushCryptoError(.badPadding, "record \(sequence) claims \(padding) bytes of padding but holds \(record.count - 2)")
            }
            guard record[2..<(2 + padding)].allSatisfy({ $0 == 0 }) else {
                throw WebPushCryptoError(.badPadding, "record \(sequence) has non-zero padding")
            }
            plaintext += record[(2 + padding)...]
            start = end
            sequence += 1
        }
        return plaintext
    }

    private func schedule(_ coding: WebPushEncoding, senderPublicKey: [UInt8], salt: [UInt8]) throws -> KeySchedule {
        let secret = try mapCrypto("the sender public key (dh / key id)") { try privateKey.sharedSecret(with: senderPublicKey) }
        return try mapCrypto("deriving the \(coding.rawValue) keys") {
            switch coding {
            case .aes128gcm:
                try KeySchedule.aes128gcm(ecdhSecret: secret, authSecret: authSecret, receiverPublic: publicKey,
                                          senderPublic: senderPublicKey, salt: salt)
            case .aesgcm:
                try KeySchedule.aesgcm(ecdhSecret: secret, authSecret: authSecret, receiverPublic: publicKey,
                                       senderPublic: senderPublicKey, salt: salt)
            }
        }
    }

    private func open(_ sealed: [UInt8], schedule: KeySchedule, sequence: Int) throws -> [UInt8] {
        do {
            return try AESGCM.open(key: schedule.key, nonce: schedule.nonce(forRecord: sequence), sealed: sealed)
        } catch let error as CryptoError where error.code == .authenticationFailed {
            throw WebPushCryptoError(.decryptionFailed, "record \(sequence) does not authenticate: the message was altered in transit, or it was encrypted for another subscription's keys or auth secret")
        } catch let error as CryptoError {
            throw WebPushCryptoError(.invalidParameter, "record \(sequence): \(error.message)")
        }
    }
}
