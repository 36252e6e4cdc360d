/**
 * The database file as a runtime keeps it, through the real runtime and SQLite: one
 * runtime per file, the files private to their owner, a file deleted or replaced
 * under a running runtime refused (what it had acknowledged saved), and a message
 * stored once however many records carry it.
 */
import { describe, expect, it } from "@effect/vitest"
import { providerRegistryLayer } from "@skein/adapters"
import { DatabaseInUse, type ProviderName, type SkeinError, type ThreadId } from "@skein/domain"
import { makeRuntimeLayer, Orchestrator } from "@skein/runtime"
import { Chunk, Effect, Either, Layer, Stream } from "effect"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { captureLogs, removeDir, tempDir, withRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName

/** The runtime on `dbPath` as a host builds it, its failure kept typed. */
const runtimeOn = (dir: string, dbPath = Path.join(dir, "skein.db")) =>
  makeRuntimeLayer({ dbPath }).pipe(Layer.provide(providerRegistryLayer({ dataDir: dir })))

/** A long text as a short, comparable value (a failed comparison of whole megabytes would print them). */
const digest = (text: string) => `${text.length}:${createHash("sha256").update(text).digest("hex")}`
const digests = (texts: ReadonlyArray<string>) => texts.map(digest)

const modeOf = (file: string) => Fs.statSync(file).mode & 0o777
const sizeOf = (file: string) => Fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0
const storedBytes = (db: string) => sizeOf(db) + sizeOf(`${db}-wal`) + sizeOf(`${db}-shm`)

/** The captured log lines that contain `part`, without the cause they end with. */
const messagesOf = (lines: ReadonlyArray<string>, part: string) =>
  lines.filter((l) => l.includes(part)).map((l) => l.replace(/ (Empty|All fibers interrupted without errors\.)$/, ""))

/** The runtime on `dir`'s database with `program`, its logs (its layer's too) going to `logs`. */
const withLoggedRuntime = <A, E>(
  dir: string,
  logs: ReturnType<typeof captureLogs>,
  program: (o: Orchestrator["Type"]) => Effect.Effect<A, E>
) =>
  Effect.runPromise(
    Effect.flatMap(Orchestrator, program).pipe(Effect.provide(runtimeOn(dir)), Effect.provide(logs.layer))
  )

const inTempDir = async <A>(f: (dir: string) => Promise<A>): Promise<A> => {
  const dir = tempDir("skein-database-")
  try {
    return await f(dir)
  } finally {
    removeDir(dir)
  }
}

describe("one runtime per database", () => {
  it("a second runtime on the same file fails with DatabaseInUse naming this process; once closed, it opens", () =>
    inTempDir(async (dir) => {
      const db = Path.join(dir, "skein.db")
      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          yield* o.createThread({ title: "first" })
          const second = yield* Effect.either(Effect.scoped(Layer.build(runtimeOn(dir))))
          expect(second).toEqual(Either.left(new DatabaseInUse({ path: db, pid: process.pid })))
          // The first runtime still serves, on its lock.
          expect((yield* o.createThread({ title: "still" })).title).toBe("still")
        })
      )
      const titles = await Effect.runPromise(
        Effect.scoped(
          Effect.flatMap(Layer.build(runtimeOn(dir)), (context) =>
            Effect.map(
              Effect.flatMap(Effect.provide(Orchestrator, context), (o) => o.listThreads({})),
              (threads) => threads.map((t) => t.title).sort()
            )
          )
        )
      )
      expect(titles).toEqual(["first", "still"])
    }))

  it("the same file through another path (a symlinked directory) is the same database", () =>
    inTempDir(async (dir) => {
      Fs.symlinkSync(dir, Path.join(dir, "link"))
      const other = Path.join(dir, "link", "skein.db")
      await withRuntime(dir, () =>
        Effect.gen(function* () {
          const second = yield* Effect.either(Effect.scoped(Layer.build(runtimeOn(dir, other))))
          expect(second).toEqual(Either.left(new DatabaseInUse({ path: other, pid: process.pid })))
        })
      )
    }))

  it("a lock file that is not SQLite's fails the start with StorageError saying what to do", () =>
    inTempDir(async (dir) => {
      const db = Path.join(dir, "skein.db")
      Fs.writeFileSync(`${db}.lock`, "x".repeat(4096))
      const started = await Effect.runPromise(Effect.either(Effect.scoped(Layer.build(runtimeOn(dir)))))
      expect(Either.isLeft(started) && started.left._tag).toBe("StorageError")
      expect(Either.isLeft(started) ? started.left.message : "").toBe(
        `Skein cannot use its database: cannot lock database ${db} (through ${db}.lock): file is not a database. If no Skein is running on it, delete ${db}.lock and start again.`
      )
      // Nothing was opened or written: no database file.
      expect(Fs.existsSync(db)).toBe(false)
    }))

  it("in-memory databases take no lock", async () => {
    const memory = makeRuntimeLayer({ dbPath: ":memory:" }).pipe(
      Layer.provide(providerRegistryLayer({ dataDir: tempDir("skein-database-") }))
    )
    const both = await Effect.runPromise(
      Effect.scoped(Effect.all([Layer.build(memory), Layer.build(memory)]).pipe(Effect.as("both")))
    )
    expect(both).toBe("both")
  })
})

describe("the database files", () => {
  it("are created readable by their owner only: the database, its WAL and shared memory, the lock", () =>
    inTempDir(async (dir) => {
      const db = Path.join(dir, "skein.db")
      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ title: "modes" })
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "hello", wait: true })
          expect([db, `${db}-wal`, `${db}-shm`, `${db}.lock`].map(modeOf)).toEqual([0o600, 0o600, 0o600, 0o600])
        })
      )
    }))

  it("an existing database open to others is made private, and the log says so", () =>
    inTempDir(async (dir) => {
      const db = Path.join(dir, "skein.db")
      await withRuntime(dir, (o) => o.createThread({ title: "loose" }))
      Fs.chmodSync(db, 0o644)
      const logs = captureLogs()
      await withLoggedRuntime(dir, logs, (o) =>
        Effect.gen(function* () {
          yield* o.createThread({ title: "tight" })
          expect([db, `${db}-wal`, `${db}-shm`].map(modeOf)).toEqual([0o600, 0o600, 0o600])
        })
      )
      expect(messagesOf(logs.lines, "mode 600")).toEqual([
        `WARN made the database files readable by their owner only (mode 600): ${db} (was 644)`
      ])
    }))
})

describe("a database file deleted or replaced under a running runtime", () => {
  /** Deletes or replaces the file after one acknowledged run, then tries two mutating commands. */
  const underRuntime = (dir: string, change: (db: string) => void) => {
    const db = Path.join(dir, "skein.db")
    const logs = captureLogs()
    return withLoggedRuntime(dir, logs, (o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ title: "kept" })
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "acknowledged", wait: true })
        change(db)
        const create = yield* Effect.either(o.createThread({ title: "refused" }))
        const run = yield* Effect.either(
          o.startRun({ threadId: thread.id, provider: alpha, message: "refused", wait: true })
        )
        return { threadId: thread.id, create, run, logs: logs.lines }
      })
    )
  }

  const refusal = (result: Either.Either<unknown, SkeinError>) => {
    expect(Either.isLeft(result)).toBe(true)
    const error = Either.isLeft(result) ? result.left : undefined
    expect(error?._tag).toBe("StorageError")
    return error?.message ?? ""
  }

  /** The copy the runtime saved, opened as the database: what was acknowledged is there. */
  const expectSaved = async (dir: string, threadId: ThreadId) => {
    const copies = Fs.readdirSync(dir).filter((f) => f.startsWith("skein.db.orphaned-"))
    expect(copies).toHaveLength(1)
    expect(modeOf(Path.join(dir, copies[0]!))).toBe(0o600)
    const restored = tempDir("skein-database-")
    try {
      Fs.copyFileSync(Path.join(dir, copies[0]!), Path.join(restored, "skein.db"))
      const view = await withRuntime(restored, (o) => o.getThread(threadId))
      expect(view.thread.title).toBe("kept")
      expect(view.runs.map((r) => [r.message, r.status])).toEqual([["acknowledged", "completed"]])
    } finally {
      removeDir(restored)
    }
    return copies[0]!
  }

  it("deleted: the next mutating commands fail with StorageError saying so; what was acknowledged is saved", () =>
    inTempDir(async (dir) => {
      const db = Path.join(dir, "skein.db")
      const { create, logs, run, threadId } = await underRuntime(dir, (file) => Fs.rmSync(file))
      const copy = await expectSaved(dir, threadId)
      const detail = `the database file ${db} was deleted while Skein had it open, so nothing more is written: what this Skein had stored is saved in ${Path.join(dir, copy)} (move it to ${db} to keep it); then restart Skein`
      const [, newThread] = /^Storage failed: cannot append 1 event\(s\) to thread (\S+): /.exec(refusal(create)) ?? []
      expect(refusal(create)).toBe(
        `Storage failed: cannot append 1 event(s) to thread ${newThread}: ${detail}. The command was not recorded; retry it with the same commandId.`
      )
      expect(refusal(run)).toContain(`: ${detail}.`)
      // One warning, however many commands were refused.
      expect(messagesOf(logs, "WARN the database file")).toEqual([`WARN ${detail}`])
    }))

  it("deleted while nothing is written: closing the runtime saves what it had and says so", () =>
    inTempDir(async (dir) => {
      const db = Path.join(dir, "skein.db")
      const logs = captureLogs()
      const threadId = await withLoggedRuntime(dir, logs, (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ title: "kept" })
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "acknowledged", wait: true })
          Fs.rmSync(db)
          return thread.id
        })
      )
      const copy = await expectSaved(dir, threadId)
      expect(messagesOf(logs.lines, "WARN the database file")).toEqual([
        `WARN the database file ${db} was deleted while Skein had it open, so nothing more is written: what this Skein had stored is saved in ${Path.join(dir, copy)} (move it to ${db} to keep it); then restart Skein`
      ])
    }))

  it("replaced: the next mutating commands fail with StorageError saying so; what was acknowledged is saved", () =>
    inTempDir(async (dir) => {
      const db = Path.join(dir, "skein.db")
      const { create, run, threadId } = await underRuntime(dir, (file) => {
        Fs.writeFileSync(`${file}.new`, "")
        Fs.renameSync(`${file}.new`, file)
      })
      await expectSaved(dir, threadId)
      expect(refusal(create)).toContain(`the database file ${db} was replaced by another file while Skein had it open`)
      expect(refusal(run)).toContain(`the database file ${db} was replaced by another file while Skein had it open`)
      // The file put in its place is left as it was.
      expect(Fs.readFileSync(db, "utf8")).toBe("")
    }))
})

describe("a message stored once", () => {
  it(
    "20 runs of 1 MiB grow the database, WAL and shared memory by under 1.5 bytes per byte sent; every reader sees them whole",
    () =>
      inTempDir(async (dir) => {
        const db = Path.join(dir, "skein.db")
        const runs = 20
        // Distinct messages (the store would keep equal ones once).
        const messages = Array.from({ length: runs }, (_, i) =>
          `message ${i}: `.padEnd(1_048_576, String.fromCharCode(97 + i))
        )
        const { before, after, threadId } = await withRuntime(dir, (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({ title: "big" })
            yield* o.startRun({ threadId: thread.id, provider: alpha, message: "warm up", wait: true })
            const before = storedBytes(db)
            for (const [i, message] of messages.entries()) {
              const run = yield* o.startRun({
                threadId: thread.id,
                provider: alpha,
                message,
                wait: true,
                commandId: `cmd_big_${i}` as never
              })
              expect(run.status).toBe("completed")
            }
            // The checkpointer catches up once commits pause, and the WAL starts over at its limit.
            for (let i = 0; i < 50 && sizeOf(`${db}-wal`) > 4 * 1024 * 1024; i++) yield* Effect.sleep(100)
            return { before, after: storedBytes(db), threadId: thread.id }
          })
        )
        expect((after - before) / (runs * 1_048_576)).toBeLessThan(1.5)

        // Read back by a new runtime, from the file: the view, the log's replay, a handoff.
        await withRuntime(dir, (o) =>
          Effect.gen(function* () {
            const view = yield* o.getThread(threadId)
            expect(digests(view.runs.slice(1).map((r) => r.message))).toEqual(digests(messages))
            const events = Chunk.toReadonlyArray(
              yield* Stream.runCollect(
                // The replay, up to the last run's end (the stream then follows live events).
                o
                  .events(threadId)
                  .pipe(Stream.takeUntil((e) => e.event._tag === "RunEnded" && e.event.run.ordinal === runs + 1))
              )
            )
            const started = events.flatMap((e) => (e.event._tag === "RunStarted" ? [e.event.run.message] : []))
            expect(digests(started.slice(1))).toEqual(digests(messages))
            const typed = events.flatMap((e) =>
              e.event._tag === "TurnItemRecorded" && e.event.item.type === "user_message" ? [e.event.item.text] : []
            )
            expect(digests(typed.slice(1))).toEqual(digests(messages))
            const ended = events.flatMap((e) => (e.event._tag === "RunEnded" ? [e.event.run.message] : []))
            expect(digests(ended.slice(1))).toEqual(digests(messages))
            // Another provider takes over: its handoff carries the conversation, read back whole.
            const switched = yield* o.startRun({ threadId, provider: beta, message: "over to beta", wait: true })
            expect(switched.status).toBe("completed")
            const handoff = (yield* o.getThread(threadId)).handoffs.at(-1)!
            expect(digest(JSON.stringify(yield* o.getHandoff(handoff.id)))).toBe(digest(JSON.stringify(handoff)))
            expect(handoff.summaryText.length).toBeGreaterThan(8192) // long enough to be stored by reference
            expect(handoff.summaryText).toContain(`- #21 alpha: user: message 19: ${"t".repeat(100)}`)
          })
        )
      }),
    120_000
  )
})
