#if canImport(Glibc)
import Glibc
#endif

/// What callers hand the store's writer thread: they append from any thread; the writer takes
/// everything waiting at once (which is what lets one commit serve every put that arrived during
/// the previous one). A pthread mutex and condition, not Swift concurrency: the writer is a
/// thread of its own that sleeps until there is work.
final class RequestQueue<Element: Sendable>: @unchecked Sendable {
    // @unchecked: every member below is read and written under `mutex` only.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var items: [Element] = []
    private var closed = false
    private var paused = false
    private var finished = false
    private var writer: pthread_t?

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Appends `item` for the writer; false when the queue is closed (the item is not taken).
    func append(_ item: Element) -> Bool {
        locked {
            guard !closed else { return false }
            items.append(item)
            pthread_cond_broadcast(changed)
            return true
        }
    }

    /// The writer's wait: every item waiting, once there is one (and the queue is not paused);
    /// `closing` once the queue is closed, with what was appended before.
    /// With `idleAfter`, returns an empty batch once that long passed with nothing to take (a
    /// writer with something to do while idle: Redis's reconnects and pings).
    func takeAll(idleAfter: Duration? = nil) -> (items: [Element], closing: Bool) {
        locked {
            if writer == nil { writer = pthread_self() }
            var deadline = timespec()
            if let idleAfter {
                clock_gettime(CLOCK_REALTIME, &deadline)
                let nanoseconds = Int(idleAfter / .nanoseconds(1)) + deadline.tv_nsec
                deadline.tv_sec += nanoseconds / 1_000_000_000
                deadline.tv_nsec = nanoseconds % 1_000_000_000
            }
            while !closed && (items.isEmpty || paused) {
                if idleAfter == nil {
                    pthread_cond_wait(changed, mutex)
                } else if pthread_cond_timedwait(changed, mutex, &deadline) == ETIMEDOUT {
                    break
                }
            }
            guard !paused || closed else { return ([], false) }
            let batch = items
            items.removeAll(keepingCapacity: true)
            return (batch, closed)
        }
    }

    /// No more appends; the writer answers what is queued and then stops.
    func close() {
        locked {
            closed = true
            pthread_cond_broadcast(changed)
        }
    }

    /// Holds the writer before its next batch, so what is appended meanwhile makes one batch (tests).
    func setPaused(_ value: Bool) {
        locked {
            paused = value
            pthread_cond_broadcast(changed)
        }
    }

    /// Called by the writer when it has let go of everything it held.
    func markFinished() {
        locked {
            finished = true
            pthread_cond_broadcast(changed)
        }
    }

    /// Waits for `markFinished`, unless called on the writer thread itself (a completion that
    /// dropped the store's last reference): that thread finishes after it returns.
    func waitUntilFinished() {
        locked {
            if let writer, pthread_equal(writer, pthread_self()) != 0 { return }
            while !finished { pthread_cond_wait(changed, mutex) }
        }
    }
}
