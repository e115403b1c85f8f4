#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Kernel random bytes fetched 4 KiB at a time, for the random UUIDs of request ids and
/// `apns-id`s (`UUIDText`). glibc's `arc4random_buf` makes one getrandom(2) call per request,
/// and every push needs two UUIDs: fetching for 256 UUIDs at once takes two system calls off
/// each push. Every byte comes from the kernel's generator and is handed out once.
package final class RandomBytes: Sendable {
    package static let shared = RandomBytes()

    /// Bytes fetched per getrandom(2) call.
    package static let refillBytes = 4096

    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: RandomBytes.refillBytes)
        /// Bytes of `bytes` already handed out; a full pool starts out used up.
        var used = RandomBytes.refillBytes
        /// getrandom(2) calls so far (what the pool saves is visible in tests).
        var refills = 0
    }

    private let pool = Mutex(Pool())

    package init() {}

    /// 16 fresh random bytes.
    package func words() -> (UInt64, UInt64) {
        pool.withLock { pool in
            if pool.used + 16 > pool.bytes.count {
                pool.bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
                pool.used = 0
                pool.refills += 1
            }
            let start = pool.used
            pool.used += 16
            return pool.bytes.withUnsafeBytes { raw in
                (raw.loadUnaligned(fromByteOffset: start, as: UInt64.self),
                 raw.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self))
            }
        }
    }

    /// How many times the pool went to the kernel.
    package var refillCount: Int { pool.withLock { $0.refills } }
}
