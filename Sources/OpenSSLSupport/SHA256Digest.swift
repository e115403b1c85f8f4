internal import COpenSSL
import Synchronization

/// SHA-256 by OpenSSL, which uses the CPU's SHA instructions where it has them (a few times
/// faster than a portable implementation); the relay's log line hashes a token with it.
package enum SHA256Digest {
    /// Fetched once: `EVP_sha256()` would make OpenSSL look the algorithm up on every call,
    /// which costs more than hashing a device token. Never freed (it lives as long as the process).
    nonisolated(unsafe) private static let algorithm: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    /// Digest contexts between uses, one per thread that hashed at the same time (the event
    /// loops): `EVP_Digest` made and freed one per call, about 1,100 instructions of a log line.
    /// Never freed either; there are never more than threads hashed at once.
    private static let spare = Mutex<[UnsafeSendableContext]>([])

    private struct UnsafeSendableContext: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// The first 4 bytes of the digest of `bytes`, big-endian; nil if OpenSSL failed (its
    /// error queue is emptied then: the caller has its own SHA-256 to fall back on).
    package static func firstWord(of bytes: UnsafeRawBufferPointer) -> UInt32? {
        guard let algorithm,
              let context = spare.withLock({ $0.popLast() })?.pointer ?? EVP_MD_CTX_new() else { return nil }
        // Back to the spares only after a clean run: a context OpenSSL failed on is freed.
        var ok = false
        defer {
            if ok {
                spare.withLock { $0.append(UnsafeSendableContext(pointer: context)) }
            } else {
                EVP_MD_CTX_free(context)
                OpenSSLErrorQueue.clearQueue()
            }
        }
        return withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { out -> UInt32? in
            var length: UInt32 = 0
            let digest = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            guard EVP_DigestInit_ex2(context, algorithm, nil) == 1,
                  EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1,
                  EVP_DigestFinal_ex(context, digest, &length) == 1, length == 32 else { return nil }
            ok = true
            return UInt32(bigEndian: out.load(as: UInt32.self))
        }
    }
}
