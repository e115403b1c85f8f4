internal import EventLoop
import Synchronization

/// The held pushes in a SQLite file on local disk (`HeldTable` says how it is made durable).
///
/// Group commit: one writer thread (a thread of its own: neither Swift's task pool, whose few
/// threads must never wait for a disk, nor an event loop) owns the database. It takes every
/// request waiting, writes them all in one transaction, commits it (one fsync of the log), and
/// only then answers each put. Puts that arrive while a commit runs wait for the next one,
/// which takes them all: the more arrive at once, the fewer fsyncs each costs.
///
/// Leases live in this process's memory: the file's exclusive lock means no other process
/// delivers from it, and after a restart every held push is due again (a push taken and not
/// finished when the process died is sent again, never lost).
package final class SQLitePushStore: HeldPushStore {
    // The writer's state is reached through the queue only.
    private let queue = RequestQueue<StoreRequest>()
    private let stats: StoreStatistics

    /// Opens (or creates) the store at `path` with `limits`; starts its writer thread.
    package init(path: String, limits: HoldLimits) throws(PushStoreError) {
        let table = try HeldTable(path: path)
        let totals = try table.countAll()
        stats = StoreStatistics()
        let writer = StoreWriter(table: table, limits: limits, entries: totals.entries, bytes: totals.bytes, stats: stats)
        let holder = WriterHolder(writer)
        let queue = queue
        let started = DetachedThread.start(name: "held-store") {
            while true {
                let (batch, closing) = queue.takeAll()
                holder.writer?.serve(batch)
                if closing && batch.isEmpty { break }
            }
            holder.writer = nil // closes the database before close() returns
            queue.markFinished()
        }
        guard started else {
            // deinit runs for an init that throws once every member is set: close() must not wait for a writer that never ran.
            queue.markFinished()
            throw PushStoreError(.cannotOpen, "cannot start the store's writer thread")
        }
    }

    deinit { close() }

    /// The file is open for as long as the store is.
    package var isAvailable: Bool { true }

    /// Transactions committed since open (one per writer turn that wrote): for tests and the bench.
    package var commits: Int { stats.commits.load(ordering: .relaxed) }

    package func put(_ pushes: [HeldPush], completion: @escaping @Sendable (Result<PutReceipt, PushStoreError>) -> Void) {
        if !queue.append(.put(pushes, completion)) { completion(.failure(Self.closedError)) }
    }

    package func take(max: Int, nowMs: Int64, leaseMs: Int64,
                      completion: @escaping @Sendable (Result<[StoredPush], PushStoreError>) -> Void) {
        if !queue.append(.take(max: max, nowMs: nowMs, leaseMs: leaseMs, completion)) { completion(.failure(Self.closedError)) }
    }

    package func finish(_ ids: [HeldPushID], completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void) {
        if !queue.append(.finish(ids, completion)) { completion(.failure(Self.closedError)) }
    }

    package func release(_ ids: [HeldPushID], completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void) {
        if !queue.append(.release(ids, completion)) { completion(.failure(Self.closedError)) }
    }

    package func dropExpired(nowMs: Int64, completion: @escaping @Sendable (Result<Int, PushStoreError>) -> Void) {
        if !queue.append(.dropExpired(nowMs: nowMs, completion)) { completion(.failure(Self.closedError)) }
    }

    package func counts(completion: @escaping @Sendable (Result<HeldCounts, PushStoreError>) -> Void) {
        if !queue.append(.counts(completion)) { completion(.failure(Self.closedError)) }
    }

    package func close() {
        queue.close()
        queue.waitUntilFinished()
    }

    /// Holds the writer before its next turn until `resumeWriter`: what is asked meanwhile is
    /// served in one turn (tests of group commit).
    package func pauseWriter() { queue.setPaused(true) }
    package func resumeWriter() { queue.setPaused(false) }

    /// Bounds the file to `extraPages` pages over its size now, as a disk that is nearly full
    /// would (later writes fail with SQLITE_FULL); nil lifts the bound. For tests.
    package func limitFile(extraPages: Int?, completion: @escaping @Sendable (Result<Void, PushStoreError>) -> Void) {
        let request = StoreRequest.onTable { table in
            do throws(PushStoreError) {
                let pages = if let extraPages { try table.pageCount() + extraPages } else { Int(Int32.max) }
                try table.limitPages(pages)
                completion(.success(()))
            } catch {
                completion(.failure(error))
            }
        }
        if !queue.append(request) { completion(.failure(Self.closedError)) }
    }

    private static let closedError = PushStoreError(.closed, "the store is closed")
}

/// One call to the store, queued for its writer.
enum StoreRequest: Sendable {
    case put([HeldPush], @Sendable (Result<PutReceipt, PushStoreError>) -> Void)
    case take(max: Int, nowMs: Int64, leaseMs: Int64, @Sendable (Result<[StoredPush], PushStoreError>) -> Void)
    case finish([HeldPushID], @Sendable (Result<Void, PushStoreError>) -> Void)
    case release([HeldPushID], @Sendable (Result<Void, PushStoreError>) -> Void)
    case dropExpired(nowMs: Int64, @Sendable (Result<Int, PushStoreError>) -> Void)
    case counts(@Sendable (Result<HeldCounts, PushStoreError>) -> Void)
    case onTable(@Sendable (HeldTable) -> Void)
}

/// What the store counts across threads.
final class StoreStatistics: Sendable {
    let commits = Atomic<Int>(0)
}

/// The writer thread's reference to its writer, dropped when the thread ends so the database
/// closes then. Only that thread touches it after start.
final class WriterHolder: @unchecked Sendable {
    var writer: StoreWriter?
    init(_ writer: StoreWriter) { self.writer = writer }
}
