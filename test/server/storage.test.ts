/**
 * A database this Skein cannot fully read, as a user meets it through the binary: a
 * daemon refuses to start on one a newer Skein wrote (saying which version), and an
 * event it cannot decode reaches `skein call thread.events` as a typed error, not as
 * a wait that never ends.
 */
import { createRequire } from "node:module"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { childEnv, runSkein, startDaemon, tempDir, trackDaemons } from "./support.js"

/** The few better-sqlite3 calls used here (the package ships no types). */
interface Sqlite {
  exec(sql: string): void
  prepare(sql: string): { run(...params: ReadonlyArray<unknown>): unknown }
  close(): void
}
const Database = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => Sqlite

const start = trackDaemons()

describe("databases this Skein cannot fully read", () => {
  it("a daemon refuses a database from a newer Skein, before writing anything", async () => {
    const home = tempDir("skein-storage-")
    const db = Path.join(home, "newer.db")
    const first = await start(["--port", "0", "--db", db], childEnv(home))
    first.kill()
    await first.exited
    const sqlite = new Database(db)
    sqlite.exec("INSERT INTO effect_sql_migrations (migration_id, name) VALUES (42, 'from_a_newer_skein')")
    sqlite.close()
    const refused = await startDaemon(["--port", "0", "--db", db], childEnv(home)).then(
      () => "started",
      (error: Error) => error.message
    )
    expect(refused).toMatch(/written by a newer version of Skein \(its schema is at migration 0042_from_a_newer_skein/)
    expect(refused).not.toContain("retry it with the same commandId")
  })

  it("an undecodable event reaches skein call thread.events as a typed error", async () => {
    const home = tempDir("skein-storage-")
    const db = Path.join(home, "skein.db")
    const d = await start(["--port", "0", "--db", db], childEnv(home))
    const env = childEnv(home, { SKEIN_URL: d.url })
    const created = await runSkein(["call", "thread.create", "{}"], env)
    const thread = JSON.parse(created.stdout) as { id: string }
    const sqlite = new Database(db)
    sqlite
      .prepare(
        "INSERT INTO events (thread_id, thread_sequence, type, payload, created_at) VALUES (?, 2, 'FutureEvent', ?, 'now')"
      )
      .run(thread.id, JSON.stringify({ _tag: "FutureEvent" }))
    sqlite.close()
    const events = await runSkein(["call", "thread.events", JSON.stringify({ threadId: thread.id })], env, 10_000)
    expect(events.signal).toBeNull() // it answered, it was not killed after waiting
    expect(events.code).not.toBe(0)
    const error = JSON.parse(events.stderr.trim().split("\n").at(-1)!)
    expect(error._tag).toBe("StorageError")
    expect(error.message).toContain(`event 2 of thread ${thread.id}`)
  })
})
