internal import COpenSSL

/// SHA-256 by OpenSSL, which uses the CPU's SHA instructions where it has them (a few times
/// faster than a portable implementation); the relay's log line hashes a token with it.
package enum SHA256Digest {
    /// Fetched once: `EVP_sha256()` would make OpenSSL look the algorithm up on every call,
    /// which costs more than hashing a device token. Never freed (it lives as long as the process).
    nonisolated(unsafe) private static let algorithm: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    /// The first 4 bytes of the digest of `bytes`, big-endian; nil if OpenSSL failed (its
    /// error queue is emptied then: the caller has its own SHA-256 to fall back on).
    package static func firstWord(of bytes: UnsafeRawBufferPointer) -> UInt32? {
        guard let algorithm else { return nil }
        return withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { out -> UInt32? in
            var length: UInt32 = 0
            let digest = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            guard EVP_Digest(bytes.baseAddress, bytes.count, digest, &length, algorithm, nil) == 1, length == 32 else {
                OpenSSLErrorQueue.clearQueue()
                return nil
            }
            return UInt32(bigEndian: out.load(as: UInt32.self))
        }
    }
}
