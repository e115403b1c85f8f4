internal import COpenSSL
import OpenSSLSupport

/// HKDF with SHA-256 (RFC 5869), the key schedule of encrypted content coding (RFC 8188)
/// and WebPush (RFC 8291). Built on one-shot HMAC so it needs no OSSL_PARAM plumbing.
package enum HKDF {
    /// HMAC-SHA-256 of `data` keyed with `key`, exposed because the WebPush drafts
    /// describe some steps as a bare HMAC.
    package static func hmacSHA256(key: [UInt8], data: [UInt8]) throws -> [UInt8] {
        guard let mac = HMACSHA256.mac(key: key, data: data) else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("HMAC-SHA-256 failed"))
        }
        return mac
    }

    /// HKDF-Extract: the pseudorandom key from input keying material and a salt.
    package static func extract(salt: [UInt8], ikm: [UInt8]) throws -> [UInt8] {
        try hmacSHA256(key: salt, data: ikm)
    }

    /// HKDF-Expand: `length` bytes (at most 255 × 32) of output keying material.
    package static func expand(prk: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
        guard length > 0, length <= 255 * 32 else {
            throw CryptoError(.invalidInput, "HKDF-SHA-256 can produce 1 to 8160 bytes, not \(length)")
        }
        var output: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            block = try hmacSHA256(key: prk, data: block + info + [counter])
            output += block
            counter &+= 1
        }
        return Array(output.prefix(length))
    }

    /// Extract then expand: the usual one-call form.
    package static func deriveKey(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
        try expand(prk: extract(salt: salt, ikm: ikm), info: info, length: length)
    }
}

/// AES-128-GCM with a 96-bit nonce and a 16-byte tag appended to the ciphertext: the
/// record cipher of RFC 8188 and of the older `aesgcm` WebPush coding.
package enum AESGCM {
    /// Bytes of authentication tag at the end of every sealed message.
    package static let tagLength = 16

    /// Encrypts and authenticates `plaintext`; returns ciphertext ‖ tag. A nonce must never
    /// repeat under one key (WebPush derives a fresh key from a random salt per message).
    package static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        try checkSizes(key: key, nonce: nonce)
        OpenSSLErrorQueue.clearQueue()
        guard let ctx = EVP_CIPHER_CTX_new() else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("out of memory creating a cipher context"))
        }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not start AES-128-GCM"))
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var written: Int32 = 0
        if !plaintext.isEmpty {
            let ok = out.withUnsafeMutableBufferPointer { o in
                EVP_EncryptUpdate(ctx, o.baseAddress, &written, plaintext, Int32(plaintext.count)) == 1
            }
            guard ok, Int(written) == plaintext.count else {
                throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("AES-128-GCM encryption failed"))
            }
        }
        var tail: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        guard EVP_EncryptFinal_ex(ctx, &scratch, &tail) == 1, tail == 0 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("AES-128-GCM encryption failed"))
        }
        var tag = [UInt8](repeating: 0, count: tagLength)
        guard copenssl_gcm_get_tag(ctx, &tag) == 1 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not read the GCM tag"))
        }
        out.replaceSubrange(plaintext.count..., with: tag)
        return out
    }

    /// Verifies and decrypts ciphertext ‖ tag. Nothing is returned unless the tag verifies,
    /// so a caller never acts on forged or corrupted bytes.
    package static func open(key: [UInt8], nonce: [UInt8], sealed: [UInt8]) throws -> [UInt8] {
        try checkSizes(key: key, nonce: nonce)
        guard sealed.count >= tagLength else {
            throw CryptoError(.authenticationFailed, "the ciphertext is \(sealed.count) bytes, shorter than the 16-byte tag: it was truncated")
        }
        let bodyLength = sealed.count - tagLength
        OpenSSLErrorQueue.clearQueue()
        guard let ctx = EVP_CIPHER_CTX_new() else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("out of memory creating a cipher context"))
        }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_DecryptInit_ex(ctx, EVP_aes_128_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not start AES-128-GCM"))
        }
        var out = [UInt8](repeating: 0, count: bodyLength)
        var written: Int32 = 0
        if bodyLength > 0 {
            let ok = out.withUnsafeMutableBufferPointer { o in
                sealed.withUnsafeBufferPointer { s in
                    EVP_DecryptUpdate(ctx, o.baseAddress, &written, s.baseAddress, Int32(bodyLength)) == 1
                }
            }
            guard ok, Int(written) == bodyLength else {
                throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("AES-128-GCM decryption failed"))
            }
        }
        var tag = Array(sealed[bodyLength...])
        guard copenssl_gcm_set_tag(ctx, &tag) == 1 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not set the GCM tag"))
        }
        var tail: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        guard EVP_DecryptFinal_ex(ctx, &scratch, &tail) == 1 else {
            OpenSSLErrorQueue.clearQueue()
            throw CryptoError(.authenticationFailed, "the AES-GCM tag does not verify: wrong key or nonce, or the ciphertext was altered")
        }
        return out
    }

    private static func checkSizes(key: [UInt8], nonce: [UInt8]) throws {
        guard key.count == 16 else {
            throw CryptoError(.invalidInput, "an AES-128 key is 16 bytes, not \(key.count)")
        }
        guard nonce.count == 12 else {
            throw CryptoError(.invalidInput, "an AES-GCM nonce here is 12 bytes, not \(nonce.count)")
        }
    }
}

/// Random bytes from OpenSSL's CSPRNG, for salts, auth secrets and test keys.
package enum SecureRandom {
    package static func bytes(_ count: Int) throws -> [UInt8] {
        guard count >= 0, count <= Int(Int32.max) else {
            throw CryptoError(.invalidInput, "cannot draw \(count) random bytes")
        }
        var out = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&out, Int32(count)) == 1 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("the random generator failed"))
        }
        return out
    }
}
