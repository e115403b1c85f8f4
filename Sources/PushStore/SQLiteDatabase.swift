internal import CSQLite

/// One open `sqlite3*`: closed when the last reference goes. Every statement keeps its database
/// alive, so the connection closes only after each of its statements is finalized (sqlite3_close
/// refuses a connection with statements left).
///
/// Used by one thread at a time (the store's writer), which is why it is opened without SQLite's
/// own mutex (`SQLITE_OPEN_NOMUTEX`).
final class SQLiteDatabase {
    let handle: OpaquePointer

    /// Opens (creating it when missing) the database file at `path`.
    init(path: String) throws(PushStoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let text = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let db { sqlite3_close(db) }
            throw PushStoreError(.cannotOpen, "cannot open the store at \(path): \(text)")
        }
        // SQLite opens a file it may not write read-only without a word; the first write would
        // then fail with a vague I/O error.
        guard sqlite3_db_readonly(db, "main") != 1 else {
            sqlite3_close(db)
            throw PushStoreError(.cannotOpen, "the store at \(path) is read-only to this process (the file's owner or mode)")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        sqlite3_close(handle)
    }

    /// Runs SQL that returns no rows the caller wants (pragmas, schema, BEGIN/COMMIT).
    func execute(_ sql: String) throws(PushStoreError) {
        var errorText: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorText)
        let text = errorText.map { String(cString: $0) }
        sqlite3_free(errorText)
        guard rc == SQLITE_OK else { throw failure(rc, text.map { "\(sql): \($0)" }) }
    }

    /// The first column of the first row of `sql` as an integer (a pragma's answer), or nil when there is no row.
    func integer(_ sql: String) throws(PushStoreError) -> Int64? {
        let statement = try SQLiteStatement(self, sql)
        guard try statement.step() else { return nil }
        return statement.int64(0)
    }

    /// The first column of the first row of `sql` as text.
    func text(_ sql: String) throws(PushStoreError) -> String? {
        let statement = try SQLiteStatement(self, sql)
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// Whether a transaction is open: SQLite rolls one back by itself after some errors
    /// (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM), and a ROLLBACK then would fail.
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The rowid the last INSERT gave its row.
    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// A store error for result code `rc`, decided on the code, never on the text: SQLITE_FULL
    /// (the disk, or `max_page_count`) is `diskFull`, SQLITE_BUSY/LOCKED is `inUse`.
    func failure(_ rc: Int32, _ detail: String? = nil) -> PushStoreError {
        let primary = rc & 0xff
        let what = detail ?? String(cString: sqlite3_errmsg(handle))
        let line = "\(what) (\(String(cString: sqlite3_errstr(rc))), SQLite code \(rc))"
        switch primary {
        case SQLITE_FULL: return PushStoreError(.diskFull, line)
        case SQLITE_BUSY, SQLITE_LOCKED: return PushStoreError(.inUse, line)
        default: return PushStoreError(.storeFailed, line)
        }
    }
}

/// One prepared statement, prepared once and finalized when the last reference goes. Parameters
/// are numbered from 1 and columns from 0, as in SQLite's API.
final class SQLiteStatement {
    let database: SQLiteDatabase
    private let handle: OpaquePointer

    init(_ database: SQLiteDatabase, _ sql: String) throws(PushStoreError) {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw database.failure(rc, "preparing \(sql)") }
        self.database = database
        handle = statement
    }

    deinit {
        sqlite3_finalize(handle)
    }

    func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(handle, index, value)
    }

    func bind(_ index: Int32, _ value: String?) {
        guard let value else { sqlite3_bind_null(handle, index); return }
        sqlite3_bind_text(handle, index, value, -1, csqlite_transient())
    }

    func bind(_ index: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { buffer in
            // A zero-length blob, not NULL, for an empty payload: sqlite3_bind_blob with a nil pointer binds NULL.
            buffer.isEmpty ? sqlite3_bind_zeroblob(handle, index, 0)
                : sqlite3_bind_blob(handle, index, buffer.baseAddress, Int32(buffer.count), csqlite_transient())
        }
    }

    /// Steps once: true when a row is ready to read, false when the statement is done. Any error
    /// resets the statement (and throws), so it is ready for the next use either way.
    func step() throws(PushStoreError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.failure(rc)
            reset()
            throw error
        }
    }

    /// Runs a statement that returns no row, then resets it.
    func run() throws(PushStoreError) {
        defer { reset() }
        while try step() {}
    }

    /// Ready for the next use: the last run forgotten and every parameter unbound.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: bytes)
    }

    func blob(_ column: Int32) -> [UInt8] {
        // The pointer first, then its size, as SQLite's documentation orders the two calls.
        let bytes = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}
