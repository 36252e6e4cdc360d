/**
 * An embedding host calls the Orchestrator directly, with values only its compiler
 * checked (or none, from plain JavaScript). Every input is held to its RPC method's
 * payload schema, as the server holds what RPC clients send: a bad one is refused
 * with `InvalidInput` naming the method and the field, before anything runs, so the
 * log, the threads and the runs are as they were; the error's text stays short
 * whatever was sent. The runtime's own options are checked the same way, when its
 * layer is built: out of range, the runtime does not start and writes nothing.
 */
import type { ProviderName, SkeinError, ThreadId } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { providerRegistryLayer } from "@skein/adapters"
import { EventStore, makeRuntimeLayer } from "@skein/runtime"
import type { RuntimeOverrides } from "@skein/runtime"
import { Cause, Effect, Either, Exit, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { inTempRuntime, removeDir, storeOn, tempDir } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
/** Any value, as a host in plain JavaScript may pass it. */
const loose = <A>(value: unknown): A => value as A

const refusedWith = (result: Either.Either<unknown, SkeinError>, method: string, field: string) => {
  expect(Either.isLeft(result), `${method} ${field}: accepted`).toBe(true)
  if (Either.isRight(result)) return
  expect(result.left._tag).toBe("InvalidInput")
  const detail = (result.left as { readonly detail: string }).detail
  expect(detail.startsWith(`${method}: `), detail).toBe(true)
  expect(detail).toContain(`["${field}"]`)
  expect(detail.length).toBeLessThan(1_100)
}

describe("what a host passes the Orchestrator", () => {
  it("is held to its method's schema: refused with InvalidInput, before anything is written", async () => {
    await inTempRuntime((o, _actors, dir) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ title: "input" })
        const threadId = thread.id
        const first = yield* o.startRun({ threadId, provider: alpha, message: "a first run", wait: true })
        expect(first.status).toBe("completed")
        const reader = storeOn(dir)
        const logOf = (id: ThreadId) =>
          Effect.promise(() =>
            reader.runPromise(Effect.flatMap(EventStore, (store) => store.readEvents(id, 0, 10_000)))
          )
        const logBefore = yield* logOf(threadId)
        const threadsBefore = yield* o.listThreads({})

        const run = (input: Record<string, unknown>) =>
          Effect.either(o.startRun(loose({ threadId, provider: alpha, message: "ok", ...input })))
        refusedWith(yield* run({ message: "" }), "run.start", "message")
        // Five million characters: refused, and the error does not repeat them.
        refusedWith(yield* run({ message: "x".repeat(5_000_000) }), "run.start", "message")
        refusedWith(yield* run({ handoffBudgetTokens: 5 }), "run.start", "handoffBudgetTokens")
        refusedWith(yield* run({ model: 42 }), "run.start", "model")
        refusedWith(yield* run({ provider: "no such name!" }), "run.start", "provider")
        refusedWith(yield* run({ threadId: "" }), "run.start", "threadId")
        refusedWith(yield* run({ wait: "yes" }), "run.start", "wait")
        refusedWith(yield* Effect.either(o.createThread({ title: "t".repeat(501) })), "thread.create", "title")
        refusedWith(yield* Effect.either(o.createThread(loose({ workspace: 42 }))), "thread.create", "workspace")
        refusedWith(yield* Effect.either(o.interruptRun(loose({ threadId: 42 }))), "run.interrupt", "threadId")
        refusedWith(
          yield* Effect.either(o.forkThread(loose({ sourceThreadId: threadId, sourcePoint: "the middle" }))),
          "thread.fork",
          "sourcePoint"
        )
        refusedWith(
          yield* Effect.either(o.mergeBack(loose({ forkThreadId: null }))),
          "thread.mergeBack",
          "forkThreadId"
        )
        refusedWith(
          yield* Effect.either(o.rollback(loose({ threadId, toRunOrdinal: -1 }))),
          "thread.rollback",
          "toRunOrdinal"
        )
        refusedWith(
          yield* Effect.either(o.rollback(loose({ threadId, toRunOrdinal: 0.5 }))),
          "thread.rollback",
          "toRunOrdinal"
        )
        refusedWith(
          yield* Effect.either(o.spawnSubagent(loose({ parentThreadId: threadId, provider: alpha, prompt: "" }))),
          "subagent.spawn",
          "prompt"
        )
        refusedWith(
          yield* Effect.either(o.respondApproval(loose({ threadId, approvalId: "apr_1", decision: "maybe" }))),
          "approval.respond",
          "decision"
        )
        // Reads too: a window out of range, a sequence below zero.
        refusedWith(yield* Effect.either(o.getThread(threadId, loose({ runs: { limit: 0 } }))), "thread.get", "runs")
        refusedWith(yield* Effect.either(Stream.runDrain(o.events(threadId, -1))), "thread.events", "fromSequence")

        // Nothing of it reached the log, the threads or the runs.
        expect((yield* logOf(threadId)).length).toBe(logBefore.length)
        expect((yield* o.listThreads({})).map((t) => t.id)).toEqual(threadsBefore.map((t) => t.id))
        expect((yield* o.getThread(threadId)).runs.map((r) => r.ordinal)).toEqual([1])
        // And the thread goes on as before.
        const next = yield* o.startRun({ threadId, provider: alpha, message: "a second run", wait: true })
        expect(next).toMatchObject({ ordinal: 2, status: "completed" })
        yield* Effect.promise(() => reader.dispose())
      })
    )
  })

  it("the runtime's options are checked when its layer is built: out of range, nothing starts", async () => {
    const dir = tempDir()
    try {
      const dbPath = Path.join(dir, "skein.db")
      const build = (options: RuntimeOverrides) =>
        Effect.runPromiseExit(
          Effect.scoped(
            Layer.build(
              makeRuntimeLayer({ dbPath, ...options }).pipe(Layer.provide(providerRegistryLayer({ dataDir: dir })))
            )
          )
        )
      const refused: Array<readonly [RuntimeOverrides, string]> = [
        [{ itemDelayMs: -1 }, "itemDelayMs"],
        [{ passivateAfterMs: Number.NaN }, "passivateAfterMs"],
        // Longer than a Node timer waits: it would fire at once.
        [{ sessionIdleMs: 10_000_000_000 }, "sessionIdleMs"],
        [{ handoffBudgetTokens: 10 }, "handoffBudgetTokens"],
        [{ deadlines: { callMs: -5 } }, "callMs"],
        [{ staleness: { maxForeignRuns: -1, maxChainedHandoffs: 8, deltaBudgetFraction: 1 } }, "maxForeignRuns"],
        [loose({ summarySource: { _tag: "elsewhere" } }), "summarySource"],
        [loose({ workspaceRoots: "/srv" }), "workspaceRoots"]
      ]
      for (const [options, field] of refused) {
        const exit = await build(options)
        const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : undefined
        expect(error?._tag === "Some" && error.value, field).toMatchObject({ _tag: "InvalidInput" })
        const detail = error?._tag === "Some" ? (error.value as { readonly detail: string }).detail : ""
        expect(detail.startsWith("runtime options: "), detail).toBe(true)
        expect(detail, field).toContain(`["${field}"]`)
        expect(Fs.existsSync(dbPath), `${field}: a database was created`).toBe(false)
      }
      // In range, the runtime starts.
      expect(Exit.isSuccess(await build({ itemDelayMs: 0, passivateAfterMs: 0, deadlines: { callMs: 5_000 } }))).toBe(
        true
      )
      expect(Fs.existsSync(dbPath)).toBe(true)
    } finally {
      removeDir(dir)
    }
  })
})
