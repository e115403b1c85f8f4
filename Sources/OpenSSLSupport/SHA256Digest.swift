internal import COpenSSL

/// SHA-256 by OpenSSL, which uses the CPU's SHA instructions where it has them (a few times
/// faster than a portable implementation); the relay's log line hashes a token with it.
package enum SHA256Digest {
    /// The first 4 bytes of the digest of `bytes`, big-endian; nil if OpenSSL failed (the
    /// caller has its own SHA-256 to fall back on).
    ///
    /// Through `copenssl_sha256` (SHA256_Init/Update/Final on a stack context), not EVP: even
    /// with the algorithm fetched once and the contexts kept for reuse, each EVP digest re-makes
    /// the provider's context and takes a lock, half as much again as hashing a token.
    package static func firstWord(of bytes: UnsafeRawBufferPointer) -> UInt32? {
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let hashed = withUnsafeMutableBytes(of: &digest) { out in
            copenssl_sha256(bytes.baseAddress, bytes.count, out.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 1
        }
        guard hashed else { return nil }
        return withUnsafeBytes(of: digest) { UInt32(bigEndian: $0.load(as: UInt32.self)) }
    }
}
