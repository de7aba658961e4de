import Logging
import PostgresNIO

/// The tables of PostgreSQL state, one migration per version, applied under an advisory lock
/// so that workers starting together migrate once.
enum ClusterSchema {
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE fetchrun_sources (
                name text PRIMARY KEY,
                fingerprint text NOT NULL,
                retired boolean NOT NULL DEFAULT false,
                due_at timestamptz NOT NULL,
                lease_owner text,
                lease_until timestamptz,
                lease_token bigint NOT NULL DEFAULT 0,
                last_fetch_at timestamptz,
                last_outcome text,
                last_success_at timestamptz,
                consecutive_failures integer NOT NULL DEFAULT 0,
                failing_since timestamptz,
                last_error_kind text,
                last_error_message text,
                last_error_at timestamptz,
                current_interval_ms bigint,
                item_count integer NOT NULL DEFAULT 0,
                etag text,
                last_modified text,
                body_hash text,
                snapshot text
            )
            """,
            "CREATE INDEX fetchrun_sources_due ON fetchrun_sources (due_at) WHERE NOT retired",
            """
            CREATE TABLE fetchrun_outbox (
                id bigserial PRIMARY KEY,
                output text NOT NULL,
                delivery_id text NOT NULL,
                source text NOT NULL,
                kind text NOT NULL,
                payload text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                attempts integer NOT NULL DEFAULT 0,
                next_attempt_at timestamptz NOT NULL DEFAULT now(),
                last_error text,
                delivered_at timestamptz,
                claim_owner text,
                claim_until timestamptz,
                UNIQUE (output, delivery_id)
            )
            """,
            "CREATE INDEX fetchrun_outbox_due ON fetchrun_outbox (output, next_attempt_at) WHERE delivered_at IS NULL",
            """
            CREATE TABLE fetchrun_workers (
                id text PRIMARY KEY,
                host text NOT NULL,
                pid integer NOT NULL,
                started_at timestamptz NOT NULL,
                heartbeat_at timestamptz NOT NULL
            )
            """,
        ],
        [
            // Whether the source's adapter reads its previous snapshot: only then does a lease
            // carry the snapshot (an RSS feed's is read only when the feed changed).
            "ALTER TABLE fetchrun_sources ADD COLUMN reads_snapshot boolean NOT NULL DEFAULT true",
        ],
        [
            // One engine over two stores: a source's state is one JSON document
            // (SourceState.json), written by the rules in Swift; the columns left are those SQL
            // selects by. A source a `run` leased by name has no due time until it is scheduled.
            "ALTER TABLE fetchrun_sources ADD COLUMN state text NOT NULL DEFAULT '{}'",
            """
            UPDATE fetchrun_sources SET state = json_strip_nulls(json_build_object(
                'last_fetch', (extract(epoch FROM last_fetch_at) * 1000)::bigint, 'last_outcome', last_outcome,
                'last_success', (extract(epoch FROM last_success_at) * 1000)::bigint, 'failures', consecutive_failures,
                'failing_since', (extract(epoch FROM failing_since) * 1000)::bigint, 'error_kind', last_error_kind,
                'error_message', last_error_message, 'error_at', (extract(epoch FROM last_error_at) * 1000)::bigint,
                'interval_ms', current_interval_ms, 'items', item_count, 'etag', etag, 'last_modified', last_modified,
                'body_hash', body_hash))::text
            """,
            """
            ALTER TABLE fetchrun_sources DROP COLUMN last_fetch_at, DROP COLUMN last_outcome, DROP COLUMN last_success_at,
                DROP COLUMN consecutive_failures, DROP COLUMN failing_since, DROP COLUMN last_error_kind,
                DROP COLUMN last_error_message, DROP COLUMN last_error_at, DROP COLUMN current_interval_ms,
                DROP COLUMN item_count, DROP COLUMN etag, DROP COLUMN last_modified, DROP COLUMN body_hash
            """,
            "ALTER TABLE fetchrun_sources ALTER COLUMN due_at DROP NOT NULL",
        ],
        [
            // A delivery its output gave up on (after its attempts and age): kept and listed,
            // not claimed again until `outputs --retry --given-up`.
            "ALTER TABLE fetchrun_outbox ADD COLUMN given_up_at timestamptz",
        ],
        [
            // Sent rows stay for 30 days: pruning them after each delivery pass was a scan of
            // the whole table (what is pending is found by fetchrun_outbox_due already).
            "CREATE INDEX fetchrun_outbox_delivered ON fetchrun_outbox (delivered_at) WHERE delivered_at IS NOT NULL",
        ],
        [
            // A service that answered 429 (or 503) with a wait: no worker sends to that output
            // before then.
            """
            CREATE TABLE fetchrun_output_holds (
                output text PRIMARY KEY,
                not_before timestamptz NOT NULL,
                reason text NOT NULL
            )
            """,
        ],
        [
            // The history of changes (HistoryStore), as state.db keeps it: the record as JSON
            // text, `seq` ordering a source's rows for `keep`, `expires_at` its `max_age`.
            """
            CREATE TABLE fetchrun_history (
                seq bigserial PRIMARY KEY,
                id text NOT NULL UNIQUE,
                source text NOT NULL,
                kind text NOT NULL,
                at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL,
                record text NOT NULL
            )
            """,
            "CREATE INDEX fetchrun_history_by_source ON fetchrun_history (source, seq)",
            "CREATE INDEX fetchrun_history_by_time ON fetchrun_history (at)",
            "CREATE INDEX fetchrun_history_by_expiry ON fetchrun_history (expires_at)",
        ],
    ]

    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            // One migration at a time across every worker (the lock ends with the transaction).
            try await connection.query("SELECT pg_advisory_xact_lock(7234061)", logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS fetchrun_meta (key text PRIMARY KEY, value text NOT NULL)", logger: logger)
            var version = 0
            for try await text in try await connection.query("SELECT value FROM fetchrun_meta WHERE key = 'schema_version'", logger: logger).decode(String.self) {
                version = Int(text) ?? 0
            }
            guard version <= migrations.count else {
                throw SchemaTooNew(version: version, understood: migrations.count)
            }
            for step in migrations[version...] {
                for statement in step { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            }
            let current = String(migrations.count)
            try await connection.query("INSERT INTO fetchrun_meta (key, value) VALUES ('schema_version', \(current)) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", logger: logger)
        }
    }
}

/// The database was migrated by a newer fetchrun.
struct SchemaTooNew: Error, CustomStringConvertible {
    var version: Int
    var understood: Int

    var description: String { "the database's fetchrun schema is version \(version), newer than this fetchrun understands (\(understood))" }
}
