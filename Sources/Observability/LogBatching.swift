#if canImport(Glibc)
import Glibc
#endif

/// Holds the log lines of an event-loop thread and writes them in one write(2) at the end of a
/// loop turn: once `maxDelay` has passed since the end of the turn that logged the oldest held
/// line, or `flushBytes / 2` are held, so on a busy loop a write carries many lines. Lines stay
/// in order; a loop holding lines sleeps at most `maxDelay` before writing them.
///
/// It reads no clock: the loop passes its own time to `endOfTurn(now:)`, so logging a line costs
/// no clock read.
package enum LogBatching {
    /// Past this a batch is written at once, so one long turn cannot hold much memory.
    static let flushBytes = 64 * 1024
    /// How long, in nanoseconds, a line may wait for company; short beside anything that reads logs.
    package static let maxDelay: Int64 = 5_000_000

    final class Buffer {
        var writer: LineWriter?
        var bytes: [UInt8] = []
        /// The loop's time at the end of the turn that found the oldest held line; nil while
        /// nothing is held or that turn has not ended yet.
        var firstHeldTurn: Int64?

        init() { bytes.reserveCapacity(flushBytes + 4096) }

        func flush() {
            firstHeldTurn = nil
            guard let writer, !bytes.isEmpty else { return }
            writer.write(bytes)
            bytes.removeAll(keepingCapacity: true)
        }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static func current() -> Buffer? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<Buffer>.fromOpaque(raw).takeUnretainedValue()
    }

    /// From now on, lines logged on this thread wait for `flush()`.
    package static func begin() {
        guard current() == nil else { return }
        pthread_setspecific(key, Unmanaged.passRetained(Buffer()).toOpaque())
    }

    /// The end of a loop turn at `now` (nanoseconds of the loop's monotonic clock): writes the
    /// held lines once they are `maxDelay` old (or many); returns how many nanoseconds the loop
    /// may sleep before it must call again, nil when nothing is held.
    package static func endOfTurn(now: Int64) -> Int64? {
        guard let buffer = current(), !buffer.bytes.isEmpty else { return nil }
        let since = buffer.firstHeldTurn ?? now
        buffer.firstHeldTurn = since
        let waited = now - since
        if waited >= maxDelay || buffer.bytes.count >= flushBytes / 2 {
            buffer.flush()
            return nil
        }
        return maxDelay - waited
    }

    /// Writes what is held and goes back to writing each line at once.
    package static func end() {
        guard let raw = pthread_getspecific(key) else { return }
        let buffer = Unmanaged<Buffer>.fromOpaque(raw)
        buffer.takeUnretainedValue().flush()
        pthread_setspecific(key, nil)
        buffer.release()
    }
}

/// ISO 8601 UTC with milliseconds, built by hand: a shared `DateFormatter` is slow and not
