#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// What the main thread does once `serve` or `demo` has started everything: nothing, for the
/// rest of the process's life. The work runs on the event loops' threads, signals on `signals`.
enum MainThread {
    /// The queue the signal sources (SIGTERM, SIGINT, SIGHUP) run on. Not the main queue: nothing
    /// serves it, see `park()`.
    static let signals = DispatchQueue(label: "apns-relay.signals")

    /// Blocks the main thread for good. Not `dispatchMain()`: that ends the main thread with
    /// `pthread_exit`, and the forced unwind of its frames, through the shipped static binary's
    /// unwind tables, kept about 1 MiB more of the binary resident (idle RSS 8.9 against 7.9 MiB).
    static func park() -> Never {
        while true { pause() }
    }
}
