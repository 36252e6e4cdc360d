/**
 * Receipts: a commandId names one command. Retried with the same method and payload
 * it answers what it answered the first time; reused for anything else (another
 * method, another thread, another payload) it answers CommandConflict and writes
 * nothing, whichever method used it first.
 */
import type { CommandId, ProviderName, SkeinError } from "@skein/domain"
import { ApprovalId } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { inTempRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
const cmd = (s: string) => s as CommandId

const conflict = <A>(effect: Effect.Effect<A, SkeinError>) =>
  Effect.map(Effect.either(effect), (result) => (Either.isLeft(result) ? result.left._tag : "succeeded"))

describe("receipts", () => {
  it("a reused commandId answers CommandConflict for every method, whatever used it first", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const a = yield* o.createThread({ title: "a", commandId: cmd("cmd_create") })
        const b = yield* o.createThread({ title: "b" })
        const run = yield* o.startRun({
          threadId: a.id,
          provider: alpha,
          message: "hello [[ask:May I?]]",
          wait: true,
          commandId: cmd("cmd_start")
        })
        const approval = run.items.find((i) => i.type === "approval_request")!
        const before = [(yield* o.getThread(a.id)).runs.length, (yield* o.getThread(b.id)).runs.length]

        // First used by thread.create:
        expect(
          yield* conflict(o.startRun({ threadId: a.id, provider: alpha, message: "x", commandId: cmd("cmd_create") }))
        ).toBe("CommandConflict")
        expect(yield* conflict(o.interruptRun({ threadId: a.id, commandId: cmd("cmd_create") }))).toBe(
          "CommandConflict"
        )
        expect(
          yield* conflict(
            o.respondApproval({
              threadId: a.id,
              approvalId: approval.approvalId,
              decision: "accept",
              commandId: cmd("cmd_create")
            })
          )
        ).toBe("CommandConflict")
        expect(yield* conflict(o.createThread({ title: "other", commandId: cmd("cmd_create") }))).toBe(
          "CommandConflict"
        )

        // First used by run.start on thread a:
        expect(
          yield* conflict(
            o.startRun({
              threadId: b.id,
              provider: alpha,
              message: "hello [[ask:May I?]]",
              commandId: cmd("cmd_start")
            })
          )
        ).toBe("CommandConflict")
        expect(
          yield* conflict(
            o.startRun({ threadId: a.id, provider: alpha, message: "other", commandId: cmd("cmd_start") })
          )
        ).toBe("CommandConflict")
        expect(yield* conflict(o.interruptRun({ threadId: a.id, commandId: cmd("cmd_start") }))).toBe("CommandConflict")
        expect(yield* conflict(o.interruptRun({ threadId: b.id, commandId: cmd("cmd_start") }))).toBe("CommandConflict")
        expect(
          yield* conflict(
            o.respondApproval({
              threadId: a.id,
              approvalId: ApprovalId.make("apr_unknown"),
              decision: "decline",
              commandId: cmd("cmd_start")
            })
          )
        ).toBe("CommandConflict")
        expect(yield* conflict(o.createThread({ title: "a", commandId: cmd("cmd_start") }))).toBe("CommandConflict")

        // Retried as it was, it answers what it answered.
        const again = yield* o.startRun({
          threadId: a.id,
          provider: alpha,
          message: "hello [[ask:May I?]]",
          commandId: cmd("cmd_start")
        })
        expect(again.id).toBe(run.id)
        expect((yield* o.createThread({ title: "a", commandId: cmd("cmd_create") })).id).toBe(a.id)

        // First used by approval.respond:
        const answered = yield* o.respondApproval({
          threadId: a.id,
          approvalId: approval.approvalId,
          decision: "accept",
          commandId: cmd("cmd_approve")
        })
        expect(answered).toMatchObject({ type: "approval_request", status: "accept" })
        expect(
          yield* o.respondApproval({
            threadId: a.id,
            approvalId: approval.approvalId,
            decision: "accept",
            commandId: cmd("cmd_approve")
          })
        ).toEqual(answered)
        expect(
          yield* conflict(o.startRun({ threadId: a.id, provider: alpha, message: "x", commandId: cmd("cmd_approve") }))
        ).toBe("CommandConflict")
        expect(yield* conflict(o.interruptRun({ threadId: a.id, commandId: cmd("cmd_approve") }))).toBe(
          "CommandConflict"
        )

        // Nothing was written by any refused command.
        expect([(yield* o.getThread(a.id)).runs.length, (yield* o.getThread(b.id)).runs.length]).toEqual(before)
        expect((yield* o.listThreads({})).map((t) => t.id).sort()).toEqual([a.id, b.id].sort())
      })
    )
  })
  it("lineage commands too: retried they answer as before; reused elsewhere, CommandConflict and nothing written", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const source = yield* o.createThread({ title: "source" })
        const one = yield* o.startRun({ threadId: source.id, provider: alpha, message: "one", wait: true })
        yield* o.startRun({ threadId: source.id, provider: alpha, message: "two", wait: true })

        const fork = yield* o.forkThread({
          sourceThreadId: source.id,
          sourcePoint: { runId: one.id },
          commandId: cmd("cmd_fork")
        })
        const forkAgain = yield* o.forkThread({
          sourceThreadId: source.id,
          sourcePoint: { runId: one.id },
          commandId: cmd("cmd_fork")
        })
        expect(forkAgain.thread.id).toBe(fork.thread.id)
        expect(forkAgain.transfer.id).toBe(fork.transfer.id)
        yield* o.startRun({ threadId: fork.thread.id, provider: alpha, message: "in the fork", wait: true })

        const merge = yield* o.mergeBack({ forkThreadId: fork.thread.id, commandId: cmd("cmd_merge") })
        expect((yield* o.mergeBack({ forkThreadId: fork.thread.id, commandId: cmd("cmd_merge") })).id).toBe(merge.id)
        const child = yield* o.spawnSubagent({
          parentThreadId: source.id,
          provider: alpha,
          prompt: "look",
          commandId: cmd("cmd_spawn")
        })
        const childAgain = yield* o.spawnSubagent({
          parentThreadId: source.id,
          provider: alpha,
          prompt: "look",
          commandId: cmd("cmd_spawn")
        })
        expect(childAgain).toEqual(child)

        const threadsBefore = (yield* o.listThreads({ parentThreadId: source.id })).map((t) => t.id).sort()
        const sourceBefore = yield* o.getThread(source.id)

        // Each id reused by another lineage command, by another payload, or by run.start.
        expect(
          yield* conflict(
            o.forkThread({ sourceThreadId: source.id, sourcePoint: "latest_stable", commandId: cmd("cmd_fork") })
          )
        ).toBe("CommandConflict")
        expect(yield* conflict(o.rollback({ threadId: source.id, toRunOrdinal: 1, commandId: cmd("cmd_fork") }))).toBe(
          "CommandConflict"
        )
        expect(yield* conflict(o.mergeBack({ forkThreadId: fork.thread.id, commandId: cmd("cmd_spawn") }))).toBe(
          "CommandConflict"
        )
        expect(
          yield* conflict(
            o.spawnSubagent({ parentThreadId: source.id, provider: alpha, prompt: "look", commandId: cmd("cmd_merge") })
          )
        ).toBe("CommandConflict")
        expect(
          yield* conflict(
            o.startRun({ threadId: source.id, provider: alpha, message: "x", commandId: cmd("cmd_fork") })
          )
        ).toBe("CommandConflict")

        // Nothing was written by the refused commands.
        expect((yield* o.listThreads({ parentThreadId: source.id })).map((t) => t.id).sort()).toEqual(threadsBefore)
        const sourceAfter = yield* o.getThread(source.id)
        expect(sourceAfter.runs.map((r) => r.status)).toEqual(sourceBefore.runs.map((r) => r.status))
        expect(sourceAfter.transfers).toEqual(sourceBefore.transfers)

        // The rollback itself, retried, answers as it did.
        const rolled = yield* o.rollback({ threadId: source.id, toRunOrdinal: 1, commandId: cmd("cmd_rollback") })
        const rolledAgain = yield* o.rollback({ threadId: source.id, toRunOrdinal: 1, commandId: cmd("cmd_rollback") })
        expect(rolledAgain.runs.map((r) => r.status)).toEqual(rolled.runs.map((r) => r.status))
      })
    )
  })
})
