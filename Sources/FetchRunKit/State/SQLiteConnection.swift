import CSQLite
import Foundation

/// What SQLite said went wrong, with the statement or file it was about.
package struct SQLiteError: Error, Sendable, CustomStringConvertible {
    package var code: Int32
    package var message: String

    package var description: String { message }

    /// Another connection (another process) holds the lock this statement needed, past the wait.
    package var isBusy: Bool {
        code & 0xFF == SQLITE_BUSY
    }

    /// The database was opened read-only (a folder this user cannot write) and this wrote.
    package var isReadOnly: Bool {
        code & 0xFF == SQLITE_READONLY
    }

    /// The file is not a database, or damaged: it is moved aside and rebuilt, not fixed in place.
    package var isCorruption: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB
    }
}

/// One SQLite connection and the statements prepared on it. Not thread-safe: its owner (the
/// ``StateDatabase`` actor, on a thread of its own) is the only one to use it.
package final class SQLiteConnection {
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]
    private let lockWait = LockWait()

    /// How long a statement waits for a lock another process holds: at most 5 s each (a
    /// watch beside a run holds it for milliseconds), and never past ``lockWaitsEnd``.
    private final class LockWait {
        var endsAt: ContinuousClock.Instant?
        var started = ContinuousClock.now
    }

    /// When waiting for another process's lock stops for good: a `run`'s deadline budget, so
    /// that a backup tool holding a write transaction costs the run its budget once, not five
    /// seconds per statement. `nil`: every statement waits up to 5 s.
    package var lockWaitsEnd: ContinuousClock.Instant? {
        get { lockWait.endsAt }
        set { lockWait.endsAt = newValue }
    }

    /// Opens (or, with `create`, creates) the database at `path`. A symbolic link is refused:
    /// files in the state directory are fetchrun's own.
    /// - Parameter immutable: read the file as it is, without locks or its WAL (SQLite's
    ///   `immutable=1`): for a folder this user cannot write, where SQLite could not make the
    ///   WAL's shared-memory file. Implies `readOnly`.
    package init(path: String, readOnly: Bool = false, create: Bool = true, immutable: Bool = false) throws(SQLiteError) {
        var handle: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        flags |= readOnly || immutable ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        var name = path
        if immutable {
            flags |= SQLITE_OPEN_URI
            // A URI's path: what would end it or start an escape is percent-encoded.
            let escaped = path.addingPercentEncoding(withAllowedCharacters: CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "?#%"))) ?? path
            name = "file:\(escaped)?immutable=1"
        }
        let code = sqlite3_open_v2(name, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(handle)
            throw SQLiteError(code: code, message: "\(path): \(message)")
        }
        self.handle = handle
        sqlite3_busy_handler(handle, { context, count in
            let wait = Unmanaged<LockWait>.fromOpaque(context!).takeUnretainedValue()
            let now = ContinuousClock.now
            if count == 0 { wait.started = now }
            var limit = wait.started + .seconds(5)
            if let end = wait.endsAt, end < limit { limit = end }
            guard now < limit else { return 0 }
            // Short pauses first (a writer beside us is done in a moment), then 20 ms.
            let pause = min(limit - now, count < 10 ? .milliseconds(1) : .milliseconds(20))
            usleep(UInt32(clamping: pause.components.attoseconds / 1_000_000_000_000 + pause.components.seconds * 1_000_000))
            return 1
        }, Unmanaged.passUnretained(lockWait).toOpaque())
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs statements that return no rows (schema, pragmas, transactions).
    package func execute(_ sql: String) throws(SQLiteError) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw error(code, sql) }
    }

    /// Runs `sql` with `values` bound to its `?`s, calling `row` for each result row.
    /// Statements are prepared once per connection and kept.
    package func query(_ sql: String, _ values: [SQLiteValue] = [], row: (SQLiteRow) throws -> Void = { _ in }) throws {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(statement, position)
            case .integer(let number): code = sqlite3_bind_int64(statement, position, number)
            case .real(let number): code = sqlite3_bind_double(statement, position, number)
            case .text(let text):
                code = text.utf8CString.withUnsafeBufferPointer { buffer in
                    fetchrun_sqlite_bind_text(statement, position, buffer.baseAddress, Int32(buffer.count - 1))
                }
            }
            guard code == SQLITE_OK else { throw error(code, sql) }
        }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw error(code, sql) }
            try row(SQLiteRow(statement: statement))
        }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    package var changes: Int { Int(sqlite3_changes(handle)) }

    /// The first column of the first row, as an integer.
    package func integer(_ sql: String, _ values: [SQLiteValue] = []) throws -> Int64? {
        var result: Int64?
        try query(sql, values) { row in result = result ?? row.integer(0) }
        return result
    }

    /// The rows SQLite has stepped through in full scans (of a table, or of a whole index) for
    /// the statements kept on this connection, since each was prepared: what the schema's
    /// indexes leave a statement to read row by row. Tests compare it before and after.
    package var fullScanSteps: Int {
        statements.values.reduce(0) { $0 + Int(sqlite3_stmt_status($1, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0)) }
    }

    private func prepared(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code, sql) }
        statements[sql] = statement
        return statement
    }

    private func error(_ code: Int32, _ sql: String) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: "\(String(cString: sqlite3_errmsg(handle))) (in \(sql.prefix(60)))")
    }
}

/// A value bound to a statement's parameter.
package enum SQLiteValue: Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    package static func optional(_ text: String?) -> SQLiteValue { text.map(SQLiteValue.text) ?? .null }
    package static func optional(_ number: Int64?) -> SQLiteValue { number.map(SQLiteValue.integer) ?? .null }
}

/// One result row, valid only inside the `row` closure of ``SQLiteConnection/query(_:_:row:)``.
package struct SQLiteRow {
    fileprivate let statement: OpaquePointer

    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    package func integer(_ column: Int32) -> Int64? {
        isNull(column) ? nil : sqlite3_column_int64(statement, column)
    }

    package func text(_ column: Int32) -> String? {
        guard !isNull(column), let bytes = sqlite3_column_text(statement, column) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
    }
}
