#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoop
import Synchronization

/// The server's counters, shared by every loop.
final class ServerCounters: Sendable {
    let open = Atomic<Int>(0)
    let rejected = Atomic<Int>(0)
    let evicted = Atomic<Int>(0)
    /// What every connection's parser holds, summed (each connection adds its changes).
    let bufferedBytes = Atomic<Int>(0)
    let budgetCuts = Atomic<Int>(0)
    /// HTTPS connections closed for TLS: a failed handshake (garbage, plain HTTP, EOF half-way)
    /// or a bad record after it.
    let tlsFailures = Atomic<Int>(0)
}
