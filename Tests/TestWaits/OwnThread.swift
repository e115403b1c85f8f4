import Foundation

/// Runs `work`, which blocks its thread (a child process's pipes, a blocking socket), on a
/// thread of its own, and suspends the caller until it returns. Swift's task pool has one thread
/// per core (two here), shared by every test that runs at the same time: blocking one of them
/// would stall the others.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
