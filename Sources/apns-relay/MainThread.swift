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
    /// `pthread_exit`, whose forced unwind, in the shipped static binary (its unwinder has no
    /// `dl_iterate_phdr` index to search), reads and sorts every frame description of the
    /// binary first: 1.4 MB of `.eh_frame` read and its sorted table allocated, for nothing.
    static func park() -> Never {
        while true { pause() }
    }
}
