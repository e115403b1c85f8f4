import Synchronization
import Observability

/// Keeps records in memory so tests can assert on what was logged. Bounded: past `capacity`
/// the oldest records are dropped, so a chatty test cannot exhaust memory.
package final class InMemoryLogSink: LogSink {
    private let storage: Mutex<[LogRecord]>
    package let capacity: Int

    package init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
        storage = Mutex([])
    }

    package func write(_ record: LogRecord) {
        storage.withLock { records in
            if records.count >= capacity { records.removeFirst(records.count - capacity + 1) }
            records.append(record)
        }
    }

    /// A snapshot, oldest first.
    package var records: [LogRecord] { storage.withLock { $0 } }

    package func clear() { storage.withLock { $0.removeAll() } }
}
