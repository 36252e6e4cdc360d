/**
 * The runtime in a child process, killed with SIGKILL mid-run, then restarted on the
 * same database: the run is `interrupted`, acknowledged commands are all there, and
 * no provider process from before the crash is left running.
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
})
