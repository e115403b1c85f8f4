/// The store's file: one SQLite database holding one table of held pushes, its settings, and
/// every statement the store runs, prepared once. Touched by the store's writer thread only.
///
/// Durability settings, and why (SQLite's documentation: "Write-Ahead Logging", "PRAGMA
/// synchronous", "Atomic Commit"):
/// - `journal_mode=WAL`: a commit appends the transaction's pages to the -wal file and syncs
///   that one file; the database file is written later by checkpoints. One fsync per commit,
///   sequential writes, and a crash at any moment leaves either the whole transaction or none
///   of it (a transaction's frames count only once its commit frame is in the log).
/// - `synchronous=FULL`: in WAL mode, FULL syncs the log at every commit, before the commit
///   returns, so a committed transaction survives a power loss or an OS crash as well as a
///   kill -9. NORMAL syncs only at checkpoints: it survives a kill -9 (the pages are in the
///   kernel's cache) but a power loss can roll back the last commits, and a put answered 201
///   must not be lost to one. FULL costs one fsync per commit, which group commit shares
///   among every put waiting. SQLite's unix VFS also fsyncs the directory the first time a
///   newly created -wal file is synced, so the log's name survives a power loss as well.
/// - `locking_mode=EXCLUSIVE`: the first write takes the file's lock and keeps it until the
///   store closes, so a second relay on the same file is refused at open (`inUse`) instead of
///   delivering the same pushes; the leases (which live in memory) are then the only ones. WAL
///   in this mode keeps its index in the process's memory: no -shm file.
/// - `cache_size=-512`: 512 KiB of page cache instead of SQLite's 2 MB. The store appends and
///   reads its oldest rows: with SQLite's cache `push-store-probe bench` (20,000 puts from 64
///   threads, 3 runs each) stored 57,373-67,056 puts/s against 51,159-59,863 with this one,
///   about a tenth more, for 1.8 MiB more resident memory once 200,000 were held.
/// - `AUTOINCREMENT`: ids are never reused, so a late `finish` of a dropped push cannot remove
///   a newer one that took its id.
final class HeldTable {
    static let schemaVersion: Int64 = 1

    let database: SQLiteDatabase
    private let begin, commit, rollback: SQLiteStatement
    private let insert, deviceBeyond, deleteByID, expired, due, oldest, totals: SQLiteStatement

    /// Opens or creates the store at `path`, takes its lock, and checks its schema version.
    init(path: String) throws(PushStoreError) {
        let database = try SQLiteDatabase(path: path)
        do throws(PushStoreError) {
            try database.execute("PRAGMA locking_mode=EXCLUSIVE")
            let mode = try database.text("PRAGMA journal_mode=WAL")
            guard mode == "wal" else {
                throw PushStoreError(.cannotOpen, "the store at \(path) cannot use a write-ahead log (journal_mode is \(mode ?? "unknown"))")
            }
            try database.execute("PRAGMA synchronous=FULL")
            try database.execute("PRAGMA cache_size=-512")
            try database.execute("BEGIN IMMEDIATE")
            let version = try database.integer("PRAGMA user_version") ?? 0
            guard version == 0 || version == Self.schemaVersion else {
                try? database.execute("ROLLBACK")
                throw PushStoreError(.cannotOpen, "the store at \(path) has schema version \(version); this relay knows \(Self.schemaVersion)")
            }
            try database.execute("""
                CREATE TABLE IF NOT EXISTS held (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    route TEXT NOT NULL, environment TEXT NOT NULL, app TEXT NOT NULL, device TEXT NOT NULL, topic TEXT NOT NULL,
                    apns_id TEXT NOT NULL, priority INTEGER NOT NULL, collapse_id TEXT, push_type TEXT NOT NULL,
                    urgency TEXT NOT NULL, arrival_ms INTEGER NOT NULL, ttl_s INTEGER NOT NULL,
                    expires_ms INTEGER NOT NULL, bytes INTEGER NOT NULL, payload BLOB NOT NULL);
                CREATE INDEX IF NOT EXISTS held_device ON held(device, id);
                CREATE INDEX IF NOT EXISTS held_expiry ON held(expires_ms);
                PRAGMA user_version = \(Self.schemaVersion);
                COMMIT;
                """)
        } catch where error.code == .cannotOpen {
            throw error
        } catch {
            // Opening is the first access: a file locked by another process, or one that is not
            // a database, fails here, before the open call itself would have said anything.
            if error.code == .inUse {
                throw PushStoreError(.inUse, "the store at \(path) is open in another process: \(error.message)")
            }
            throw PushStoreError(error.code == .diskFull ? .diskFull : .cannotOpen, "cannot set up the store at \(path): \(error.message)")
        }
        self.database = database
        begin = try SQLiteStatement(database, "BEGIN IMMEDIATE")
        commit = try SQLiteStatement(database, "COMMIT")
        rollback = try SQLiteStatement(database, "ROLLBACK")
        insert = try SQLiteStatement(database, """
            INSERT INTO held (route, app, device, topic, apns_id, priority, collapse_id, push_type, urgency,
                              arrival_ms, ttl_s, expires_ms, bytes, payload, environment)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
            """)
        // Newest first along the (device, id) index: only the kept rows are stepped over.
        deviceBeyond = try SQLiteStatement(database, "SELECT id, bytes FROM held WHERE device = ?1 ORDER BY id DESC LIMIT -1 OFFSET ?2")
        deleteByID = try SQLiteStatement(database, "DELETE FROM held WHERE id = ?1 RETURNING bytes")
        expired = try SQLiteStatement(database, "SELECT id, bytes FROM held WHERE expires_ms <= ?1")
        due = try SQLiteStatement(database, """
            SELECT id, route, app, device, topic, apns_id, priority, collapse_id, push_type, urgency,
                   arrival_ms, ttl_s, payload, environment
            FROM held WHERE id > ?1 AND expires_ms > ?2 ORDER BY id LIMIT ?3
            """)
        oldest = try SQLiteStatement(database, "SELECT arrival_ms FROM held ORDER BY id LIMIT 1")
        totals = try SQLiteStatement(database, "SELECT count(*), coalesce(sum(bytes), 0) FROM held")
    }

    func beginTransaction() throws(PushStoreError) { try begin.run() }
    func commitTransaction() throws(PushStoreError) { try commit.run() }

    /// Ends an open transaction without keeping anything; nothing when SQLite already rolled it back.
    func rollbackTransaction() {
        guard database.inTransaction else { return }
        try? rollback.run()
    }

    /// How many pushes are held and their bytes, counted from the table (once, at open).
    func countAll() throws(PushStoreError) -> (entries: Int, bytes: Int) {
        defer { totals.reset() }
        guard try totals.step() else { return (0, 0) }
        return (Int(totals.int64(0)), Int(totals.int64(1)))
    }

    func insert(_ push: HeldPush) throws(PushStoreError) -> HeldPushID {
        insert.bind(1, push.route)
        insert.bind(2, push.app)
        insert.bind(3, push.deviceToken)
        insert.bind(4, push.topic)
        insert.bind(5, push.apnsID)
        insert.bind(6, Int64(push.priority))
        insert.bind(7, push.collapseID)
        insert.bind(8, push.pushType)
        insert.bind(9, push.urgency)
        insert.bind(10, push.arrivalMs)
        insert.bind(11, push.ttlSeconds)
        insert.bind(12, push.expiresAtMs)
        insert.bind(13, Int64(push.storedBytes))
        insert.bind(14, push.payload)
        insert.bind(15, push.environment)
        try insert.run()
        return HeldPushID(low: UInt64(database.lastInsertedRowID))
    }

    /// Deletes `device`'s oldest pushes beyond the newest `keep`, but none that `spare` names (a
    /// push being delivered right now): their ids and bytes.
    func trim(device: String, keep: Int, sparing spare: (HeldPushID) -> Bool) throws(PushStoreError) -> [(id: HeldPushID, bytes: Int)] {
        deviceBeyond.bind(1, device)
        deviceBeyond.bind(2, Int64(keep))
        return try deleteRows(of: deviceBeyond, sparing: spare)
    }

    /// Deletes one push: its bytes, or nil when it was not held.
    func delete(_ id: HeldPushID) throws(PushStoreError) -> Int? {
        deleteByID.bind(1, Int64(id.low))
        defer { deleteByID.reset() }
        var bytes: Int?
        while try deleteByID.step() { bytes = Int(deleteByID.int64(0)) }
        return bytes
    }

    /// Deletes every push expired at `nowMs` but those `spare` names (out for delivery): their
    /// ids and bytes.
    func deleteExpired(nowMs: Int64, sparing spare: (HeldPushID) -> Bool) throws(PushStoreError) -> [(id: HeldPushID, bytes: Int)] {
        expired.bind(1, nowMs)
        return try deleteRows(of: expired, sparing: spare)
    }

    /// Deletes the rows `selection` (bound, yielding id and bytes) finds, but those `spare`
    /// names: their ids and bytes. Read whole first, then deleted, so the read never steps over
    /// rows it is deleting.
    private func deleteRows(of selection: SQLiteStatement, sparing spare: (HeldPushID) -> Bool) throws(PushStoreError) -> [(id: HeldPushID, bytes: Int)] {
        var victims: [(id: HeldPushID, bytes: Int)] = []
        do {
            defer { selection.reset() }
            while try selection.step() {
                let id = HeldPushID(low: UInt64(selection.int64(0)))
                if !spare(id) { victims.append((id, Int(selection.int64(1)))) }
            }
        }
        for victim in victims { _ = try delete(victim.id) }
        return victims
    }

    /// Up to `limit` unexpired pushes with ids after `after`, oldest first.
    func due(after: HeldPushID, nowMs: Int64, limit: Int) throws(PushStoreError) -> [StoredPush] {
        due.bind(1, Int64(after.low))
        due.bind(2, nowMs)
        due.bind(3, Int64(limit))
        defer { due.reset() }
        var found: [StoredPush] = []
        while try due.step() {
            let push = HeldPush(
                route: due.text(1) ?? "", environment: due.text(13) ?? "", app: due.text(2) ?? "", deviceToken: due.text(3) ?? "",
                topic: due.text(4) ?? "", apnsID: due.text(5) ?? "", priority: Int(due.int64(6)),
                collapseID: due.text(7), pushType: due.text(8) ?? "", urgency: due.text(9) ?? "",
                arrivalMs: due.int64(10), ttlSeconds: due.int64(11), payload: due.blob(12))
            found.append(StoredPush(id: HeldPushID(low: UInt64(due.int64(0))), push: push))
        }
        return found
    }

    /// The arrival of the push with the lowest id, nil when none is held.
    func oldestArrival() throws(PushStoreError) -> Int64? {
        defer { oldest.reset() }
        return try oldest.step() ? oldest.int64(0) : nil
    }

    /// Bounds the file to `pages` pages (SQLITE_FULL past it), as a full disk would: for tests.
    func limitPages(_ pages: Int) throws(PushStoreError) {
        _ = try database.integer("PRAGMA max_page_count = \(pages)")
    }

    /// The file's size in pages now.
    func pageCount() throws(PushStoreError) -> Int {
        Int(try database.integer("PRAGMA page_count") ?? 0)
    }
}
