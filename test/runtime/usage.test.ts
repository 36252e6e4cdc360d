/**
 * A run keeps what its turn cost, as its provider counted it: on the run the caller gets
 * back, in thread.get, and after a restart. The scripted provider counts a token per four
 * characters of what the model read (its context and this message) and of its reply.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ProviderAdapter } from "@skein/domain"
import { ProviderName } from "@skein/domain"
import { Effect } from "effect"
import { removeDir, tempDir, withRuntime } from "../support/runtime.js"

const alpha = ProviderName.make("alpha")
const tokens = (...texts: Array<string>) => Math.ceil(texts.join("").length / 4)

describe("turn usage", () => {
  it("is kept on the run, shown by thread.get, survives a restart, and is absent when the turn did not complete", async () => {
    const dir = tempDir()
    try {
      const first = "remember the colour TEAL for later"
      const second = "and now the shape?"
      const { runs, threadId } = await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: dir })
          const one = yield* o.startRun({ threadId: thread.id, provider: alpha, message: first, wait: true })
          const two = yield* o.startRun({ threadId: thread.id, provider: alpha, message: second, wait: true })
          const failed = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[fail]]", wait: true })
          expect(failed.status).toBe("failed")
          expect(failed.usage).toBeUndefined()
          return { runs: [one, two], threadId: thread.id }
        })
      )
      const [one, two] = runs
      // Run 1 read its own message; run 2 also the first turn (message and reply "ok").
      expect(one!.usage).toEqual({ inputTokens: tokens(first), outputTokens: tokens("ok") })
      expect(two!.usage).toEqual({ inputTokens: tokens(first, "ok", second), outputTokens: tokens("ok") })
      // A fresh runtime on the same storage reads the same.
      const stored = await withRuntime(dir, (o) => o.getThread(threadId))
      expect(stored.runs.map((r) => r.usage)).toEqual([one!.usage, two!.usage, undefined])
    } finally {
      removeDir(dir)
    }
  })

  it("a count the run cannot store (not whole, not finite) is left out; the run still completes", async () => {
    const dir = tempDir()
    try {
      // The provider's TurnCompleted reports odd counts, one per run.
      const odd = [
        { inputTokens: 1.5, outputTokens: 2 },
        { inputTokens: Number.POSITIVE_INFINITY, outputTokens: 2 },
        { inputTokens: -3, outputTokens: 2 }
      ]
      let turn = 0
      const mapAdapter = (adapter: ProviderAdapter): ProviderAdapter => ({
        ...adapter,
        openSession: (options) =>
          Effect.map(adapter.openSession(options), (handle) => ({
            ...handle,
            runTurn: (input, onEvents) =>
              handle.runTurn(input, (events) =>
                onEvents(
                  events.map((event) =>
                    event._tag === "TurnCompleted" ? { ...event, usage: odd[turn++ % odd.length]! } : event
                  )
                )
              )
          }))
      })
      const ended = await withRuntime(
        dir,
        (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({ workspace: dir })
            return yield* Effect.forEach(odd, (_, i) =>
              o.startRun({ threadId: thread.id, provider: alpha, message: `run ${i}`, wait: true })
            )
          }),
        { mapAdapter }
      )
      expect(ended.map((r) => [r.status, r.usage])).toEqual(odd.map(() => ["completed", undefined]))
    } finally {
      removeDir(dir)
    }
  })
})
