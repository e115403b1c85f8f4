// CryptoSupport — the WebPush primitives (P-256 ECDH, HKDF, AES-GCM, random bytes) over
// libcrypto, for WebPushCrypto and the tools that make test pushes; not in the APNs product.
