import Foundation

/// The schema of `<state_dir>/state.db`, shared by the connections that use it: the
/// ``SQLiteStateStore`` (source state, the outbox) and the ``DownloadQueue`` (one row per download).
enum StateSchema {
    static func path(in stateDirectory: String) -> String {
        (stateDirectory as NSString).appendingPathComponent("state.db")
    }

    /// The schema, one step per version: `migrations[n]` takes version n to n + 1.
    static let migrations = [
        """
        CREATE TABLE sources (
            name TEXT PRIMARY KEY NOT NULL,
            last_fetch_at INTEGER,
            last_outcome TEXT,
            last_success_at INTEGER,
            consecutive_failures INTEGER NOT NULL DEFAULT 0,
            failing_since INTEGER,
            last_error_kind TEXT,
            last_error_message TEXT,
            last_error_at INTEGER,
            next_due_at INTEGER,
            current_interval_ms INTEGER,
            item_count INTEGER NOT NULL DEFAULT 0
        );
        """,
        // What a fetch needs to find "nothing changed" without its snapshot.
        """
        ALTER TABLE sources ADD COLUMN etag TEXT;
        ALTER TABLE sources ADD COLUMN last_modified TEXT;
        ALTER TABLE sources ADD COLUMN body_hash TEXT;
        """,
        // Leases: which process is fetching a source, until when.
        """
        ALTER TABLE sources ADD COLUMN lease_owner INTEGER;
        ALTER TABLE sources ADD COLUMN lease_until INTEGER;
        """,
        // The download queue, one row per URL (it was downloads/queue.json): `position` keeps
        // the order entries were queued in, `entry` is the entry as JSON.
        """
        CREATE TABLE downloads (
            url TEXT PRIMARY KEY NOT NULL,
            position INTEGER NOT NULL,
            state TEXT NOT NULL,
            entry TEXT NOT NULL
        );
        CREATE INDEX downloads_in_order ON downloads(position);
        """,
        // Permanent redirects: where the source's URL now leads, and how many fetches in a row said so.
        """
        ALTER TABLE sources ADD COLUMN moved_to TEXT;
        ALTER TABLE sources ADD COLUMN moved_count INTEGER NOT NULL DEFAULT 0;
        """,
        // The outbox: what outputs are to send, one row per output and delivery; a row stays
        // until sent (then for a while, to recognise a repeat). `claim_*`: which process is
        // sending it, until when.
        """
        CREATE TABLE outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            output TEXT NOT NULL,
            delivery_id TEXT NOT NULL,
            source TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            last_error TEXT,
            delivered_at INTEGER,
            claim_owner INTEGER,
            claim_until INTEGER,
            UNIQUE (output, delivery_id)
        );
        CREATE INDEX outbox_due ON outbox(output, delivered_at, next_attempt_at);
        """,
        // One engine over two stores: a source's state is one JSON document (SourceState.json),
        // written by the rules in Swift; the columns left are the due time and the lease, with
        // its token.
        """
        ALTER TABLE sources ADD COLUMN state TEXT NOT NULL DEFAULT '{}';
        ALTER TABLE sources ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
        UPDATE sources SET state = json_object(
            'last_fetch', last_fetch_at, 'last_outcome', last_outcome, 'last_success', last_success_at,
            'failures', consecutive_failures, 'failing_since', failing_since, 'error_kind', last_error_kind,
            'error_message', last_error_message, 'error_at', last_error_at, 'interval_ms', current_interval_ms,
            'items', item_count, 'etag', etag, 'last_modified', last_modified, 'body_hash', body_hash,
            'moved_to', moved_to, 'moved_count', moved_count);
        ALTER TABLE sources DROP COLUMN last_fetch_at;
        ALTER TABLE sources DROP COLUMN last_outcome;
        ALTER TABLE sources DROP COLUMN last_success_at;
        ALTER TABLE sources DROP COLUMN consecutive_failures;
        ALTER TABLE sources DROP COLUMN failing_since;
        ALTER TABLE sources DROP COLUMN last_error_kind;
        ALTER TABLE sources DROP COLUMN last_error_message;
        ALTER TABLE sources DROP COLUMN last_error_at;
        ALTER TABLE sources DROP COLUMN current_interval_ms;
        ALTER TABLE sources DROP COLUMN item_count;
        ALTER TABLE sources DROP COLUMN etag;
        ALTER TABLE sources DROP COLUMN last_modified;
        ALTER TABLE sources DROP COLUMN body_hash;
        ALTER TABLE sources DROP COLUMN moved_to;
        ALTER TABLE sources DROP COLUMN moved_count;
        """,
        // A delivery its output gave up on (after its attempts and age): kept and listed, not
        // claimed again until `outputs --retry --given-up`.
        """
        ALTER TABLE outbox ADD COLUMN given_up_at INTEGER;
        """,
        // Sent rows stay for 30 days, to recognise a repeat: at a few deliveries a second that
        // is millions of rows, and the routine statements (the claims' holders, what is
        // pending, the pruning) scanned them all, each delivery pass. Partial indexes hold
        // only the rows each statement looks for.
        """
        CREATE INDEX outbox_claimed ON outbox(claim_owner) WHERE claim_owner IS NOT NULL;
        CREATE INDEX outbox_undelivered ON outbox(id) WHERE delivered_at IS NULL;
        CREATE INDEX outbox_delivered ON outbox(delivered_at) WHERE delivered_at IS NOT NULL;
        """,
        // The download queue keeps a row for every URL it downloaded; a download's steps read
        // only the rows they are about (DownloadQueue.Rows): by state, by URL (the key), a
        // folder's rows, a source's done files in a folder (`keep`), a finished file's owner.
        // Columns rather than indexes on the JSON: a row whose entry is not JSON (the state
        // folder is anyone's to edit) would make such an index, and every write, fail.
        """
        ALTER TABLE downloads ADD COLUMN source TEXT;
        ALTER TABLE downloads ADD COLUMN directory TEXT;
        ALTER TABLE downloads ADD COLUMN file TEXT;
        UPDATE downloads SET source = json_extract(entry, '$.source'), directory = json_extract(entry, '$.directory'),
            file = json_extract(entry, '$.file') WHERE json_valid(entry);
        CREATE INDEX downloads_by_state ON downloads(state);
        CREATE INDEX downloads_by_directory ON downloads(directory);
        CREATE INDEX downloads_by_file ON downloads(file) WHERE file IS NOT NULL;
        """,
        // The names a folder's rows hold (their part file's, the server's suggestion, the
        // finished file's), which queuing a download must not give again: reading the folder's
        // every row for them made each fetch that queued something pay for the whole history
        // (1.8 s at 50,000 past downloads). `file_name` is the last component of `file`.
        """
        ALTER TABLE downloads ADD COLUMN part_name TEXT;
        ALTER TABLE downloads ADD COLUMN suggested_name TEXT;
        ALTER TABLE downloads ADD COLUMN file_name TEXT;
        UPDATE downloads SET part_name = json_extract(entry, '$.part_name'),
            suggested_name = json_extract(entry, '$.suggested_name') WHERE json_valid(entry);
        UPDATE downloads SET file_name = substr(file, length(rtrim(file, replace(file, '/', ''))) + 1) WHERE file IS NOT NULL;
        CREATE INDEX downloads_by_part_name ON downloads(directory, part_name);
        CREATE INDEX downloads_by_suggested_name ON downloads(directory, suggested_name) WHERE suggested_name IS NOT NULL;
        CREATE INDEX downloads_by_file_name ON downloads(directory, file_name) WHERE file_name IS NOT NULL;
        """,
        // Whether a failed download is tried again at the next start: every start of a run,
        // watch or transfer looked for them by reading every failed row, and a podcast's dead
        // back catalogue leaves thousands (0.65 s a run at 10,000, 3.4 s at 50,000).
        """
        ALTER TABLE downloads ADD COLUMN retryable INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
        UPDATE downloads SET retryable = coalesce(json_extract(entry, '$.retryable'), 0),
            attempts = coalesce(json_extract(entry, '$.attempts'), 0) WHERE json_valid(entry);
        CREATE INDEX downloads_by_retry ON downloads(state, retryable, attempts);
        """,
        // A service that answered 429 (or 503) with a wait: nothing goes to that output before
        // then, whichever process sends next, its row's own backoff notwithstanding.
        """
        CREATE TABLE output_holds (
            output TEXT PRIMARY KEY,
            not_before INTEGER NOT NULL,
            reason TEXT NOT NULL
        );
        """,
        // The history of changes (HistoryStore): one row per change a source reported, the
        // record as JSON; `seq` orders a source's rows for `keep`, `expires_at` is the time
        // plus the source's `max_age`.
        """
        CREATE TABLE history (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            source TEXT NOT NULL,
            kind TEXT NOT NULL,
            at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            record TEXT NOT NULL
        );
        CREATE INDEX history_by_source ON history(source, seq);
        CREATE INDEX history_by_time ON history(at);
        CREATE INDEX history_by_expiry ON history(expires_at);
        """,
    ]

    static func migrate(_ connection: SQLiteConnection) throws(SQLiteError) {
        do {
            try connection.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
            let version = Int(try connection.integer("PRAGMA user_version") ?? 0)
            guard version <= migrations.count else {
                throw SQLiteError(code: 0, message: "its schema version \(version) is newer than this fetchrun understands (\(migrations.count))")
            }
            guard version < migrations.count else { return }
            // Each step reads the version again inside its transaction: another connection
            // (another process, or the download queue's) may have migrated in the meantime.
            var migrated = false
            while !migrated {
                migrated = try connection.transaction {
                    let step = Int(try connection.integer("PRAGMA user_version") ?? 0)
                    guard step < migrations.count else { return true }
                    try connection.execute(migrations[step])
                    try connection.execute("PRAGMA user_version = \(step + 1)")
                    return false
                }
            }
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw SQLiteError(code: 0, message: "\(error)")
        }
    }

    /// A link, FIFO or device planted where the database belongs, or a file with a second name
    /// (a hard link), is refused with a reason (SQLite would only say "unable to open database
    /// file", or write through the link).
    static func refuseAnythingButAFile(_ path: String) throws(StateStoreError) {
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            guard lstat(file, &info) == 0 else { continue }
            let kind = info.st_mode & S_IFMT
            guard kind == S_IFREG else {
                throw StateStoreError(store: file, reason: "it is \(SafeFile.describe(kind)), not a file; fetchrun does not follow links inside the state directory — move it aside")
            }
            // A second name is a way to make fetchrun write a file elsewhere.
            guard info.st_nlink <= 1 else {
                throw StateStoreError(store: file, reason: "it has \(info.st_nlink) names (a hard link), and fetchrun writes only a file with one name — copy it (cp) rather than link it, or remove the other name")
            }
        }
    }
}
