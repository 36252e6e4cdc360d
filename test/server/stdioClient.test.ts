/**
 * The typed stdio client against the real `skein stdio` child process: calls, streams
 * and typed errors through `SkeinClientShape`; a dead child fails pending and later
 * requests instead of hanging; closing the scope ends the child.
 */
import { describe, expect, it } from "@effect/vitest"
import { ProviderName, ThreadId } from "@skein/domain"
import type { StoredEvent } from "@skein/domain"
import { Cause, Chunk, Effect, Exit, Fiber, Option, Schedule, Scope, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { followThread, makeSkeinStdioClient, SkeinStdioClientError } from "@skein/server"
import { isAlive } from "../support/runtime.js"
import { binPath, childEnv, tempDir } from "./support.js"

/** A preload that records the child's PID, so a test can kill it by PID. */
const pidPreload = (home: string) => {
  const file = Path.join(home, "record-pid.mjs")
  Fs.writeFileSync(
    file,
    `import { writeFileSync } from "node:fs"\nwriteFileSync(process.env.SKEIN_TEST_PID_FILE, String(process.pid))\n`
  )
  return pathToFileURL(file).href
}

/** A temp home, a `skein stdio` command line that records its PID, and cleanup. */
const withHome = <A, E>(
  use: (home: {
    readonly dir: string
    readonly options: { command: string; args: Array<string>; env: Record<string, string> }
    readonly pid: Effect.Effect<number, Error>
  }) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => tempDir("skein-stdio-client-")),
    (dir) => {
      const pidFile = Path.join(dir, "child.pid")
      const options = {
        command: process.execPath,
        args: ["--import", pidPreload(dir), binPath, "stdio"],
        env: childEnv(dir, { SKEIN_TEST_PID_FILE: pidFile })
      }
      const pid = Effect.try(() => Number(Fs.readFileSync(pidFile, "utf8"))).pipe(
        Effect.filterOrFail(
          (n) => Number.isInteger(n) && n > 0,
          () => new Error("no pid yet")
        ),
        Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.intersect(Schedule.recurs(200)))),
        Effect.mapError((e) => new Error(`the child never recorded its pid: ${String(e)}`))
      )
      return Effect.scoped(use({ dir, options, pid }))
    },
    (dir) =>
      Effect.sync(() => {
        // Whatever happened, no child outlives its test.
        try {
          const pid = Number(Fs.readFileSync(Path.join(dir, "child.pid"), "utf8"))
          if (isAlive(pid)) process.kill(pid, "SIGKILL")
        } catch {
          // never started
        }
        Fs.rmSync(dir, { recursive: true, force: true })
      })
  )

const waitUntil = (condition: () => boolean, timeoutMs: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    while (!condition()) {
      if (Date.now() > deadline) return false
      yield* Effect.sleep("20 millis")
    }
    return true
  })

describe("makeSkeinStdioClient", () => {
  it.live(
    "calls, streams and typed errors through the typed client over a real `skein stdio` child",
    () =>
      withHome(({ options }) =>
        Effect.gen(function* () {
          const client = yield* makeSkeinStdioClient(options)
          const thread = yield* client.thread.create({ title: "over stdio" })
          expect(thread.title).toBe("over stdio")

          const run = yield* client.run.start({
            threadId: thread.id,
            provider: ProviderName.make("alpha"),
            message: "hello over stdio",
            wait: true
          })
          expect(run.status).toBe("completed")
          expect(run.items.some((i) => i.type === "assistant_message")).toBe(true)

          const view = yield* client.thread.get({ threadId: thread.id })
          expect(view.thread.title).toBe("over stdio")
          expect(view.runs.map((r) => r.status)).toEqual(["completed"])

          // Concurrent requests share the one pipe and each gets its own answer.
          const [a, b, listed] = yield* Effect.all(
            [client.thread.create({ title: "a" }), client.thread.create({ title: "b" }), client.thread.list({})],
            { concurrency: "unbounded" }
          )
          expect([a.title, b.title]).toEqual(["a", "b"])
          expect(listed.map((t) => t.title)).toContain("over stdio")

          // Framing: newlines inside strings stay inside one line; a line far larger than
          // a pipe read, with multi-byte characters across read boundaries, comes back whole.
          const message = "/tmp/é\n✓\r\n\u2028".repeat(40_000)
          const bigThread = yield* client.thread.create({ title: "line\nbreaks" })
          expect(bigThread.title).toBe("line\nbreaks")
          const big = yield* client.run.start({
            threadId: bigThread.id,
            provider: ProviderName.make("alpha"),
            message,
            wait: true
          })
          expect(big.message).toBe(message)

          const events = yield* client.thread.events({ threadId: thread.id }).pipe(
            Stream.takeUntil((e) => e.event._tag === "RunEnded"),
            Stream.runCollect,
            Effect.map(Chunk.toReadonlyArray),
            Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error("events did not reach RunEnded") })
          )
          const tags = events.map((e) => e.event._tag)
          expect(tags[0]).toBe("ThreadCreated")
          expect(tags.at(-1)).toBe("RunEnded")
          expect(tags.indexOf("RunStarted")).toBeGreaterThan(0)
          expect(tags).toContain("TurnItemRecorded")
          expect(events.map((e) => e.threadSequence)).toEqual(events.map((_, i) => i + 1))
          expect(events.every((e) => e.threadId === thread.id)).toBe(true)

          const missing = yield* Effect.flip(client.thread.get({ threadId: ThreadId.make("thr_nope") }))
          expect(missing._tag).toBe("ThreadNotFound")
          expect(missing.message).toContain("thr_nope")

          // Still serving after a typed error.
          const again = yield* client.thread.get({ threadId: thread.id })
          expect(again.thread.id).toBe(thread.id)
        })
      ),
    60_000
  )

  it.live(
    "with restart, the next request after a child's death starts a new child; followThread resumes with no gap or duplicate",
    () =>
      withHome(({ options, pid }) =>
        Effect.gen(function* () {
          const client = yield* makeSkeinStdioClient({ ...options, restart: true })
          const thread = yield* client.thread.create({ title: "survives its child" })
          const run = (message: string) =>
            client.run.start({ threadId: thread.id, provider: ProviderName.make("alpha"), message, wait: true }).pipe(
              // A request made while the death is being reported fails with it; the next one restarts.
              Effect.retry({
                while: (error) => error._tag === "RpcClientError",
                schedule: Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(50)))
              })
            )
          expect((yield* run("before")).status).toBe("completed")

          const seen: Array<StoredEvent> = []
          const following = yield* followThread(client, { threadId: thread.id, resumeFor: "30 seconds" }).pipe(
            Stream.runForEach((e) => Effect.sync(() => void seen.push(e))),
            Effect.fork
          )
          const ended = (n: number) => () => seen.filter((e) => e.event._tag === "RunEnded").length >= n
          expect(yield* waitUntil(ended(1), 10_000)).toBe(true)

          const firstPid = yield* pid
          process.kill(firstPid, "SIGKILL")
          expect(yield* waitUntil(() => !isAlive(firstPid), 5_000)).toBe(true)

          expect((yield* run("after")).status).toBe("completed")
          const secondPid = yield* pid
          expect(secondPid).not.toBe(firstPid)
          expect(isAlive(secondPid)).toBe(true)

          expect(yield* waitUntil(ended(2), 20_000)).toBe(true)
          yield* Fiber.interrupt(following)
          expect(seen.map((e) => e.threadSequence)).toEqual(seen.map((_, i) => i + 1))
          const view = yield* client.thread.get({ threadId: thread.id })
          expect(view.runs.map((r) => r.status)).toEqual(["completed", "completed"])
        })
      ),
    60_000
  )

  it.live(
    "a child killed by PID fails the pending stream and the next request with the reason",
    () =>
      withHome(({ options, pid }) =>
        Effect.gen(function* () {
          const client = yield* makeSkeinStdioClient(options)
          const thread = yield* client.thread.create({ title: "doomed" })
          const seen: Array<string> = []
          const following = yield* client.thread.events({ threadId: thread.id }).pipe(
            Stream.runForEach((e) => Effect.sync(() => void seen.push(e.event._tag))),
            Effect.fork
          )
          expect(yield* waitUntil(() => seen.length > 0, 10_000)).toBe(true)
          expect(seen[0]).toBe("ThreadCreated")

          const childPid = yield* pid
          process.kill(childPid, "SIGKILL")

          const pending = yield* Fiber.await(following).pipe(
            Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the pending stream hung") })
          )
          expect(Exit.isFailure(pending)).toBe(true)
          const pendingError = Exit.isFailure(pending) ? Cause.failureOption(pending.cause) : Option.none()
          expect(Option.isSome(pendingError)).toBe(true)
          const error = Option.getOrThrow(pendingError) as { _tag: string; message: string }
          expect(error._tag).toBe("RpcClientError")
          expect(error.message).toContain("SIGKILL")
          expect(error.message).toContain(String(childPid))

          const next = yield* Effect.flip(client.thread.list({})).pipe(
            Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the next request hung") })
          )
          expect(next._tag).toBe("RpcClientError")
          expect(next.message).toContain("SIGKILL")
        })
      ),
    60_000
  )

  it.live(
    "a child that dies at start fails the request with its stderr",
    () =>
      withHome(({ dir, options }) =>
        Effect.gen(function* () {
          const badConfig = Path.join(dir, "providers.json")
          Fs.writeFileSync(badConfig, "{ not json")
          const client = yield* makeSkeinStdioClient({ ...options, args: [...options.args, "--config", badConfig] })
          const error = yield* Effect.flip(client.thread.list({})).pipe(
            Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the request hung") })
          )
          expect(error._tag).toBe("RpcClientError")
          expect(error.message).toMatch(/exited with code [1-9]/)
          expect(error.message).toContain("stderr ended with")
        })
      ),
    60_000
  )

  it.live("fails with SkeinStdioClientError when the command cannot start", () =>
    withHome(({ dir }) =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          makeSkeinStdioClient({ command: Path.join(dir, "no-such-skein"), args: ["stdio"], env: childEnv(dir) })
        )
        expect(error).toBeInstanceOf(SkeinStdioClientError)
        expect(error._tag).toBe("SkeinStdioClientError")
        expect(error.message).toContain("no-such-skein")
        expect(error.message).toContain("ENOENT")
      })
    )
  )

  it.live(
    "closing the scope ends the child's stdin and the child exits on its own",
    () =>
      withHome(({ options, pid }) =>
        Effect.gen(function* () {
          const scope = yield* Scope.make()
          const client = yield* makeSkeinStdioClient(options).pipe(Scope.extend(scope))
          yield* client.thread.create({ title: "short-lived" })
          const childPid = yield* pid
          expect(isAlive(childPid)).toBe(true)
          const started = Date.now()
          yield* Scope.close(scope, Exit.void)
          const took = Date.now() - started
          expect(isAlive(childPid)).toBe(false)
          // Well under the 5 s grace: the child exited because its stdin ended, not by SIGKILL.
          expect(took).toBeLessThan(4_500)
        })
      ),
    60_000
  )
})
