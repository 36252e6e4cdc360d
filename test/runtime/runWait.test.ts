/**
 * `run.start` with `wait`: the run it answers is the run as the thread shows it
 * afterwards (record and items), whether the answer was built from the events watched
 * since the start or, for a retried command naming a run already under way, read once
 * that run ended.
 */
import type { CommandId, ProviderName } from "@skein/domain"
import { makeId } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { inTempRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName

/** Many kinds of item in one turn, an approval among them, and a workspace write. */
const busyTurn = "go [[reason:why]] [[cmd:npm test:1]] [[plan:a;b]] [[ask:May I?]] [[child:look]] [[decide:yes]]"

describe("run.start with wait", () => {
  it("answers the run exactly as the thread shows it afterwards", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        for (const message of ["first", busyTurn, "[[fail]]", `${busyTurn} again`]) {
          const answered = yield* o.startRun({ threadId: thread.id, provider: alpha, message, wait: true })
          const shown = (yield* o.getThread(thread.id)).runs.find((run) => run.id === answered.id)
          expect(answered).toEqual(shown)
          expect(["completed", "failed"]).toContain(answered.status)
        }
        const busy = (yield* o.getThread(thread.id)).runs[1]!
        expect(busy.items.map((item) => item.type)).toEqual(
          expect.arrayContaining(["reasoning", "command_execution", "plan", "approval_request", "assistant_message"])
        )
      })
    )
  })

  it("a retried command for a run under way answers that run once it ended", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const commandId = "cmd_wait_retry" as CommandId
        const input = { threadId: thread.id, provider: alpha, message: `[[sleep:300]] ${busyTurn}`, commandId }
        const first = yield* o.startRun(input)
        expect(first.status).toBe("running")
        // The retry watches from after the run started: it cannot build the run from events.
        const retried = yield* o.startRun({ ...input, wait: true })
        expect(retried.id).toBe(first.id)
        expect(retried.status).toBe("completed")
        expect(retried).toEqual((yield* o.getThread(thread.id)).runs.find((run) => run.id === first.id))
        expect(retried.items.some((item) => item.type === "assistant_message")).toBe(true)
      })
    )
  })

  it("a start delivered again with the run id it chose answers that run, and starts no other", async () => {
    await inTempRuntime((o, actors) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        // Ended: answered as it ended.
        const ended = { threadId: thread.id, provider: alpha, message: busyTurn, runId: makeId.run() }
        const first = yield* actors.startAndWait(ended)
        expect(first.id).toBe(ended.runId)
        expect(first.status).toBe("completed")
        expect(yield* actors.startAndWait(ended)).toEqual(first)
        // Going: answered as it goes, not refused as a run in the way.
        const going = { threadId: thread.id, provider: alpha, message: "[[sleep:300]] later", runId: makeId.run() }
        const start = (input: typeof going) => actors.use(thread.id, (actor) => actor.askSettled("StartRun", input))
        expect((yield* start(going)).run.id).toBe(going.runId)
        const again = yield* start(going)
        expect([again.run.id, again.run.status]).toEqual([going.runId, "running"])
        const after = { threadId: thread.id, provider: alpha, message: "after", wait: true, whenBusy: "queue" as const }
        expect((yield* o.startRun(after)).status).toBe("completed")
        const runs = (yield* o.getThread(thread.id)).runs
        expect(runs.map((run) => run.id)).toEqual([ended.runId, going.runId, runs[2]!.id])
      })
    )
  })
})
