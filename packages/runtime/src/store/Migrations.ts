/**
 * The SQLite schema, as versioned migrations for the `@effect/sql` Migrator.
 *
 * - `events` is the append-only log: `sequence` is the global order, `thread_sequence`
 *   the per-thread one (1, 2, 3 … without gaps), `payload` the Schema-encoded event.
 * - The projection tables hold the latest state of every entity, one row per entity of
 *   the thread whose log recorded it (`thread_id`), with the columns lookups need and a
 *   `data` column holding the Schema-encoded entity as JSON. They are derived data:
 *   `EventStore.rebuildProjections` recreates them from the log.
 * - `receipts` make mutating commands idempotent by `command_id`.
 *
 * JSON columns are declared TEXT (SQLite stores JSON as text; a `JSON` type name would
 * get NUMERIC affinity and turn `"42"` into an integer).
 *
 * On PostgreSQL (a newer store) the first migration creates the whole schema as the
 * SQLite migrations leave it (PostgresSchema.ts); the later ones, up to the version
 * that schema is, have nothing to do there. Both dialects count the same versions.
 *
 * A new version is a new entry `NNNN_name` in `migrations`, with its statements for
 * each dialect; never edit a shipped one.
 */
import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as PostgresSchema from "./PostgresSchema.js"
import type { Dialect } from "./StoreDb.js"

const statements = (...sqls: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.forEach(sqls, (text) => sql.unsafe(text), { discard: true }))

const initial = statements(
  `CREATE TABLE events (
    sequence INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    thread_sequence INTEGER NOT NULL CHECK (thread_sequence >= 1),
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    command_id TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (thread_id, thread_sequence)
  )`,
  `CREATE TABLE threads (
    id TEXT PRIMARY KEY NOT NULL,
    parent_thread_id TEXT,
    root_thread_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
  )`,
  `CREATE INDEX threads_parent ON threads (parent_thread_id) WHERE parent_thread_id IS NOT NULL`,
  `CREATE INDEX threads_root ON threads (root_thread_id)`,
  // A run's ordinal is its position in its thread; run ids are globally unique.
  `CREATE TABLE runs (
    thread_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL CHECK (ordinal >= 1),
    id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    provider TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread_id, ordinal)
  )`,
  `CREATE INDEX runs_active ON runs (status) WHERE status IN ('queued', 'running')`,
  `CREATE TABLE turn_items (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread_id, id)
  )`,
  `CREATE TABLE provider_threads (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    provider TEXT NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread_id, id)
  )`,
  `CREATE TABLE transfers (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    source_thread_id TEXT NOT NULL,
    target_thread_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread_id, id)
  )`,
  `CREATE INDEX transfers_source ON transfers (source_thread_id)`,
  `CREATE INDEX transfers_target ON transfers (target_thread_id)`,
  `CREATE TABLE handoffs (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    transfer_id TEXT NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread_id, id)
  )`,
  `CREATE INDEX handoffs_id ON handoffs (id)`,
  `CREATE TABLE checkpoints (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    run_ordinal INTEGER NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread_id, id)
  )`,
  `CREATE TABLE receipts (
    command_id TEXT PRIMARY KEY NOT NULL,
    method TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    result TEXT NOT NULL,
    created_at TEXT NOT NULL
  )`
)

/** Lineage reads a thread's checkpoint by run (a fork's source point) without scanning them all. */
const checkpointsByRun = statements(`CREATE INDEX checkpoints_run ON checkpoints (thread_id, run_id)`)

/**
 * Coverage in rows keyed by run: a run's end adds one row (ProviderThreadServed)
 * instead of rewriting its provider thread, whose record grows with its history.
 */
const providerThreadRuns = statements(
  `CREATE TABLE provider_thread_runs (
    thread_id TEXT NOT NULL,
    provider_thread_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    handoff_id TEXT,
    turn_ref TEXT,
    status TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, provider_thread_id, ordinal)
  )`
)

/**
 * What a thread actor reads at activation, in indexed reads that do not grow with the
 * thread's history (`loadThread`): the heads of provider threads and handoffs (their
 * records without the per-run lists and without the handoff texts, which grow), and
 * indexes for the rest (rolled-back runs, usable provider threads, the handoffs a
 * provider thread received since its snapshot, open transfers, a run's items and
 * handoffs, checkpoints by run ordinal).
 */
const compactThreads = statements(
  `ALTER TABLE provider_threads ADD COLUMN head TEXT`,
  `UPDATE provider_threads SET head = json_remove(data, '$.coverage.nativeRunOrdinals', '$.nativeTurns')`,
  `ALTER TABLE handoffs ADD COLUMN head TEXT`,
  `ALTER TABLE handoffs ADD COLUMN target_run_id TEXT`,
  `UPDATE handoffs SET head = json_remove(data, '$.payload', '$.summaryText'), target_run_id = json_extract(data, '$.targetRunId')`,
  `CREATE INDEX handoffs_target_run ON handoffs (thread_id, target_run_id)`,
  `CREATE INDEX runs_rolled_back ON runs (thread_id, ordinal) WHERE status = 'rolled_back'`,
  `CREATE INDEX turn_items_run ON turn_items (thread_id, run_id)`,
  `CREATE INDEX turn_items_approvals ON turn_items (thread_id, run_id) WHERE type = 'approval_request'`,
  `CREATE INDEX provider_threads_usable ON provider_threads (thread_id) WHERE status <> 'stale'`,
  `CREATE INDEX provider_thread_runs_handoffs ON provider_thread_runs (thread_id, provider_thread_id, ordinal) WHERE handoff_id IS NOT NULL`,
  `CREATE INDEX transfers_status ON transfers (thread_id, status)`,
  `CREATE INDEX transfers_type ON transfers (thread_id, type, source_thread_id)`,
  `CREATE INDEX checkpoints_ordinal ON checkpoints (thread_id, run_ordinal)`
)

/**
 * A run's items under one key: the unique index (thread, run, item) both finds a run's
 * items and keeps an item's row unique, where there were two (the primary key on
 * (thread, item) and an index on (thread, run)). Every item append writes one index
 * fewer (`npm run bench`, store: the append ratio against raw inserts went from 0.39 to
 * 0.41-0.44). Item ids are random and an item never changes run, so an item id is as unique
 * within its run as within its thread. Rowids are kept: a run's items are read back in
 * rowid order.
 */
const turnItemsByRun = statements(
  `CREATE TABLE turn_items_by_run (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (thread_id, run_id, id)
  )`,
  `INSERT INTO turn_items_by_run (rowid, thread_id, id, run_id, seq, type, data)
    SELECT rowid, thread_id, id, run_id, seq, type, data FROM turn_items ORDER BY rowid`,
  `DROP TABLE turn_items`,
  `ALTER TABLE turn_items_by_run RENAME TO turn_items`,
  `CREATE INDEX turn_items_approvals ON turn_items (thread_id, run_id) WHERE type = 'approval_request'`
)

/**
 * Fewer pages written per run. Each b-tree a commit touches is a page SQLite appends to
 * the WAL (a frame: two writes), and a run commits twice; a scripted run wrote 26.7
 * frames (strace, page numbers named with `dbstat`), 22.2 after this and the upserts' fixed
 * columns (ProjectionTables.ts), which leave the index of run ids alone at a run's end:
 * - `events` without AUTOINCREMENT: its counter row in `sqlite_sequence` was rewritten
 *   by every append. The log is never deleted from, so the next sequence is still the
 *   largest plus one; the rows and their sequences are copied as they are.
 * - `runs` and `provider_thread_runs` WITHOUT ROWID: the row lives in its key's b-tree
 *   instead of a table and a key index beside it. Neither is read in rowid order (runs
 *   by ordinal, served runs by provider thread and ordinal).
 * - no index of checkpoints by run id: a run's checkpoint is found by the run's ordinal
 *   (`checkpoints_ordinal`), with the run id checked on the row.
 */
const fewerPagesPerRun = statements(
  `CREATE TABLE events_v6 (
    sequence INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    thread_sequence INTEGER NOT NULL CHECK (thread_sequence >= 1),
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    command_id TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (thread_id, thread_sequence)
  )`,
  `INSERT INTO events_v6 (sequence, thread_id, thread_sequence, type, payload, command_id, created_at)
    SELECT sequence, thread_id, thread_sequence, type, payload, command_id, created_at FROM events ORDER BY sequence`,
  `DROP TABLE events`,
  `ALTER TABLE events_v6 RENAME TO events`,
  `CREATE TABLE runs_v6 (
    thread_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL CHECK (ordinal >= 1),
    id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    provider TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread_id, ordinal)
  ) WITHOUT ROWID`,
  `INSERT INTO runs_v6 (thread_id, ordinal, id, status, provider, data)
    SELECT thread_id, ordinal, id, status, provider, data FROM runs`,
  `DROP TABLE runs`,
  `ALTER TABLE runs_v6 RENAME TO runs`,
  `CREATE INDEX runs_active ON runs (status) WHERE status IN ('queued', 'running')`,
  `CREATE INDEX runs_rolled_back ON runs (thread_id, ordinal) WHERE status = 'rolled_back'`,
  `CREATE TABLE provider_thread_runs_v6 (
    thread_id TEXT NOT NULL,
    provider_thread_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    handoff_id TEXT,
    turn_ref TEXT,
    status TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, provider_thread_id, ordinal)
  ) WITHOUT ROWID`,
  `INSERT INTO provider_thread_runs_v6 (thread_id, provider_thread_id, ordinal, handoff_id, turn_ref, status, updated_at)
    SELECT thread_id, provider_thread_id, ordinal, handoff_id, turn_ref, status, updated_at FROM provider_thread_runs`,
  `DROP TABLE provider_thread_runs`,
  `ALTER TABLE provider_thread_runs_v6 RENAME TO provider_thread_runs`,
  `CREATE INDEX provider_thread_runs_handoffs ON provider_thread_runs (thread_id, provider_thread_id, ordinal) WHERE handoff_id IS NOT NULL`,
  `DROP INDEX checkpoints_run`
)

/**
 * A run's git checkpoint is taken after its end is recorded, as `pending` until then:
 * start-up and a thread's actor look for the ones Skein stopped before taking. Only
 * those rows are in the index (a checkpoint is pending for one capture's time); with
 * the run ordinal in it, it also gives the lookups their order, so SQLite reads it
 * rather than every checkpoint of the thread through `checkpoints_ordinal`.
 */
const pendingCheckpoints = statements(
  `CREATE INDEX checkpoints_pending ON checkpoints (thread_id, run_ordinal) WHERE status = 'pending'`
)

/**
 * Long strings stored once (Blobs.ts): stored JSON refers to them by their SHA-256.
 * Never cleared with the projections: the log refers to them too.
 */
const blobs = statements(`CREATE TABLE blobs (hash TEXT PRIMARY KEY NOT NULL, text TEXT NOT NULL)`)

/**
 * Runs waiting for their thread (RunQueue.ts), in order per thread. Not a projection:
 * what is here is not in the log yet, and a rebuild leaves it alone.
 */
const queuedRuns = statements(
  `CREATE TABLE queued_runs (
    run_id TEXT PRIMARY KEY NOT NULL,
    thread_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    request TEXT NOT NULL,
    command_id TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (thread_id, position)
  )`
)

/** Transfers by status across threads (`transfer.list`: the ones still waiting), oldest first. */
const transfersByStatus = statements(`CREATE INDEX transfers_by_status ON transfers (status, created_at)`)

/** Every schema version, keyed `NNNN_name` as `Migrator.fromRecord` expects. */
export const migrations = {
  "0001_initial": initial,
  "0002_checkpoints_by_run": checkpointsByRun,
  "0003_provider_thread_runs": providerThreadRuns,
  "0004_compact_threads": compactThreads,
  "0005_turn_items_by_run": turnItemsByRun,
  "0006_fewer_pages_per_run": fewerPagesPerRun,
  "0007_pending_checkpoints": pendingCheckpoints,
  "0008_blobs": blobs,
  "0009_queued_runs": queuedRuns,
  "0010_transfers_by_status": transfersByStatus
} as const

/** The same versions on PostgreSQL: the first creates the schema the others arrive at. */
const postgresMigrations: Record<keyof typeof migrations, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_initial": statements(...PostgresSchema.schema),
  "0002_checkpoints_by_run": Effect.void,
  "0003_provider_thread_runs": Effect.void,
  "0004_compact_threads": Effect.void,
  "0005_turn_items_by_run": Effect.void,
  "0006_fewer_pages_per_run": Effect.void,
  "0007_pending_checkpoints": Effect.void,
  "0008_blobs": Effect.void,
  "0009_queued_runs": Effect.void,
  "0010_transfers_by_status": Effect.void
}

/** The migrations for the dialect, for `Migrator.make`. */
export const loaderFor = (dialect: Dialect): Migrator.Loader =>
  Migrator.fromRecord(dialect === "sqlite" ? migrations : postgresMigrations)

export const loader: Migrator.Loader = loaderFor("sqlite")

/** The projection tables, in the order `rebuildProjections` clears them. */
export const projectionTables = [
  "threads",
  "runs",
  "turn_items",
  "provider_threads",
  "provider_thread_runs",
  "transfers",
  "handoffs",
  "checkpoints"
] as const
