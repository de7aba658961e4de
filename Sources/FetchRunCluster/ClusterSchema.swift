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
                throw ClusterStateError("the database's fetchrun schema is version \(version), newer than this fetchrun understands (\(migrations.count))")
            }
            for step in migrations[version...] {
                for statement in step { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            }
            let current = String(migrations.count)
            try await connection.query("INSERT INTO fetchrun_meta (key, value) VALUES ('schema_version', \(current)) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", logger: logger)
        }
    }
}

/// Why PostgreSQL state could not be used, in words.
public struct ClusterStateError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
