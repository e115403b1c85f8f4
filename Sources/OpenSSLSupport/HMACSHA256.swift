internal import COpenSSL

/// HMAC-SHA-256 by OpenSSL's one-shot `HMAC()`: the one home of the MAC for WebPush's HKDF
/// (WebPushCrypto) and for RFC 6979's nonces (`RFC6979`).
package enum HMACSHA256 {
    /// The 32-byte MAC of `data` under `key`; nil when OpenSSL failed (its error queue says why).
    package static func mac(key: [UInt8], data: [UInt8]) -> [UInt8]? {
        // An empty key is the same as a key of zeros (HMAC pads keys with zeros); passing
        // a real buffer avoids OpenSSL's NULL-key special cases.
        let key = key.isEmpty ? [UInt8](repeating: 0, count: 32) : key
        var out = [UInt8](repeating: 0, count: 32)
        var outLength: UInt32 = 0
        OpenSSLErrorQueue.clearQueue()
        let ok = key.withUnsafeBytes { k in
            data.withUnsafeBufferPointer { d in
                HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), d.baseAddress, d.count, &out, &outLength) != nil
            }
        }
        return ok && outLength == 32 ? out : nil
    }
}
