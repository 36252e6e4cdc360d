/**
 * The runtime in a child process, killed with SIGKILL mid-run, then restarted on the
 * same database: the run is `interrupted`, acknowledged commands are all there, and
 * no provider process from before the crash is left running; runs queued behind it
 * start after the restart.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ProviderName } from "@skein/domain"
import { Effect } from "effect"
import { startHost } from "../support/hostProcess.js"
import { isAlive, removeDir, tempDir, waitFor, withRuntime } from "../support/runtime.js"

describe("crash recovery", () => {
  it("recovers after SIGKILL: run interrupted, commands kept, no orphan provider", async () => {
    const dir = tempDir()
    const { host: child, info } = await startHost<{
      threadId: string
      runId: string
      pid: number
      providerPid: number | null
    }>([dir], 20_000)
    try {
      expect(info.providerPid).not.toBeNull()
      expect(isAlive(info.providerPid!)).toBe(true)
      child.kill("SIGKILL")
      expect(await waitFor(() => !isAlive(info.pid), 5_000)).toBe(true)
      // The provider exits on its own once its stdin (the dead runtime's pipe) closes.
      expect(await waitFor(() => !isAlive(info.providerPid!), 5_000)).toBe(true)

      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          const view = yield* o.getThread(info.threadId as never)
          expect(view.thread.title).toBe("crash")
          expect(view.runs).toHaveLength(1)
          expect(view.runs[0]!.id).toBe(info.runId)
          expect(view.runs[0]!.status).toBe("interrupted")
          expect(view.runs[0]!.failure?.reason).toBe("runtime_restart")
          // The acknowledged commands replay to their first results.
          const again = yield* o.createThread({ title: "crash", commandId: "cmd_host_create" as never })
          expect(again.id).toBe(info.threadId)
          const next = yield* o.startRun({
            threadId: view.thread.id,
            provider: "alpha" as ProviderName,
            message: "after the crash",
            wait: true
          })
          expect(next.status).toBe("completed")
        })
      )
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
      removeDir(dir)
    }
  }, 60_000)

  it("runs queued before a SIGKILL run after the restart, in order, each once", async () => {
    const dir = tempDir()
    const { host: child, info } = await startHost<{
      threadId: string
      runId: string
      queued: ReadonlyArray<string>
      pid: number
    }>([dir, "queue"], 20_000)
    try {
      child.kill("SIGKILL")
      expect(await waitFor(() => !isAlive(info.pid), 5_000)).toBe(true)
      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          const threadId = info.threadId as never
          // Each acknowledged start, asked again with wait, answers with its run once it has ended.
          for (const [i, runId] of info.queued.entries()) {
            const ended = yield* o.startRun({
              threadId,
              provider: (i === 1 ? "beta" : "alpha") as ProviderName,
              message: `queued ${i + 1}`,
              whenBusy: "queue",
              wait: true,
              commandId: `cmd_queue_${i + 1}` as never
            })
            expect([ended.id, ended.status]).toEqual([runId, "completed"])
          }
          const view = yield* o.getThread(threadId)
          expect(view.runs.map((r) => [r.id, r.ordinal, r.status, r.message])).toEqual([
            [info.runId, 1, "interrupted", "long [[sleep:60000]]"],
            [info.queued[0], 2, "completed", "queued 1"],
            [info.queued[1], 3, "completed", "queued 2"],
            [info.queued[2], 4, "completed", "queued 3"]
          ])
          expect(view.runs[2]!.provider).toBe("beta")
        })
      )
      // Once more from the start: nothing is left queued to run twice.
      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          yield* Effect.sleep("300 millis")
          expect((yield* o.getThread(info.threadId as never)).runs).toHaveLength(4)
        })
      )
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
      removeDir(dir)
    }
  }, 60_000)
})
