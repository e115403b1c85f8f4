internal import COpenSSL
import OpenSSLSupport

/// A P-256 key pair for ECDH, the key agreement of WebPush message encryption (RFC 8291):
/// the sender makes one per message, the receiver (the device) keeps one per subscription.
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never mutated after `init`, and each
/// derivation uses its own `EVP_PKEY_CTX`, which OpenSSL 3 allows concurrently.
package final class P256KeyAgreement: @unchecked Sendable {
    let pkey: OpaquePointer
    /// The 65-byte uncompressed point (0x04 ‖ x ‖ y): WebPush's `p256dh`, `dh` and key id.
    package let publicKeyRaw: [UInt8]

    private init(owning key: OpaquePointer, publicKeyRaw: [UInt8]) {
        pkey = key
        self.publicKeyRaw = publicKeyRaw
    }

    deinit {
        EVP_PKEY_free(pkey)
    }

    /// A fresh random key pair: a sender needs a new one for every message.
    package static func generate() throws -> P256KeyAgreement {
        let key = try generateP256Key()
        var raw = [UInt8](repeating: 0, count: 65)
        var length = 0
        let ok = EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, &raw, raw.count, &length) == 1
        guard ok, length == 65, raw[0] == 0x04 else {
            EVP_PKEY_free(key)
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not export the new public key"))
        }
        return P256KeyAgreement(owning: key, publicKeyRaw: raw)
    }

    /// Rebuilds a key pair from its 32-byte private scalar, for published test vectors and
    /// for a device that stored its subscription key. When `publicKeyRaw` is given it must
    /// match the scalar: a mismatched pair would derive secrets nobody else can.
    package init(rawPrivateKey: [UInt8], publicKeyRaw expected: [UInt8]? = nil) throws {
        guard rawPrivateKey.count == 32 else {
            throw CryptoError(.invalidKey, "a P-256 private key is 32 bytes, not \(rawPrivateKey.count)")
        }
        OpenSSLErrorQueue.clearQueue()
        var derived = [UInt8](repeating: 0, count: 65)
        guard copenssl_p256_public_from_private(rawPrivateKey, rawPrivateKey.count, &derived) == 1 else {
            OpenSSLErrorQueue.clearQueue()
            throw CryptoError(.invalidKey, "the private scalar is zero or not below the P-256 group order")
        }
        if let expected, expected != derived {
            throw CryptoError(.invalidKey, "the public key does not belong to the private key; pass the pair from the same subscription")
        }
        guard let key = copenssl_p256_from_raw(rawPrivateKey, rawPrivateKey.count, derived, derived.count) else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not build a P-256 key from raw bytes"))
        }
        pkey = key
        publicKeyRaw = derived
    }

    /// The 32-byte private scalar, so a device (or a test) can store the key and rebuild it.
    package func rawPrivateKey() throws -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: 32)
        guard copenssl_p256_private_raw(pkey, &raw) == 1 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not export the private key"))
        }
        return raw
    }

    /// The ECDH shared secret (the 32-byte x coordinate) with a peer's raw public key.
    /// The point comes from the network, so anything but a valid uncompressed P-256 point
    /// is refused rather than trusted.
    package func sharedSecret(with peerPublicRaw: [UInt8]) throws -> [UInt8] {
        let peer = try Self.publicKey(raw: peerPublicRaw)
        defer { EVP_PKEY_free(peer) }
        OpenSSLErrorQueue.clearQueue()
        guard let ctx = EVP_PKEY_CTX_new(pkey, nil) else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("out of memory creating a key context"))
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_derive_init(ctx) == 1 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not start ECDH"))
        }
        guard EVP_PKEY_derive_set_peer(ctx, peer) == 1 else {
            throw CryptoError(.invalidKey, OpenSSLErrorQueue.message("the peer public key cannot be used for ECDH"))
        }
        var length = 0
        guard EVP_PKEY_derive(ctx, nil, &length) == 1, length == 32 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("could not size the ECDH secret"))
        }
        var secret = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_derive(ctx, &secret, &length) == 1, length == 32 else {
            throw CryptoError(.operationFailed, OpenSSLErrorQueue.message("ECDH failed"))
        }
        return secret
    }

    /// An owned public-only key; the caller frees it.
    static func publicKey(raw: [UInt8]) throws -> OpaquePointer {
        guard raw.count == 65, raw[0] == 0x04 else {
            throw CryptoError(.invalidKey, "a P-256 public key must be 65 bytes starting with 0x04 (uncompressed), not \(raw.count) bytes")
        }
        OpenSSLErrorQueue.clearQueue()
        guard let key = copenssl_p256_from_raw(nil, 0, raw, raw.count) else {
            OpenSSLErrorQueue.clearQueue()
            throw CryptoError(.invalidKey, "the public key is not a point on the P-256 curve")
        }
        return key
    }
}
