/**
 * Provider switching end to end: the resolver, the handoff builder and the actor
 * runtime together, with real scripted provider processes and SQLite.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ProviderName, RunView, ThreadView } from "@skein/domain"
import type { Orchestrator } from "@skein/runtime"
import { Effect } from "effect"
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { inTempRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName

const reply = (run: RunView): string =>
  run.items
    .filter((i) => i.type === "assistant_message")
    .map((i) => ("text" in i ? i.text : ""))
    .join("\n")

/** `C1 native 1,2,3,4,5,9 handoffs H2(6-8)`-style lines, in provider-thread order. */
export const coverageLines = (view: ThreadView): Array<string> =>
  view.providerThreads.map((pt) => {
    const handoffs = pt.coverage.handoffIds.map((id) => {
      const h = view.handoffs.find((x) => x.id === id)!
      return `${h.coveredRunOrdinals.from}-${h.coveredRunOrdinals.to}`
    })
    return `${pt.provider} native ${pt.coverage.nativeRunOrdinals.join(",")} handoffs ${handoffs.join(" ")}`.trim()
  })

/** Every file under a directory, as text. */
const allText = (dir: string): string => {
  let out = ""
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry)
    out += statSync(path).isDirectory() ? allText(path) : readFileSync(path, "utf8")
  }
  return out
}

describe("provider switching", () => {
  it("reproduces the seed example exactly", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ title: "seed" })
        const plan: Array<ProviderName> = [alpha, alpha, alpha, alpha, alpha, beta, beta, beta, alpha]
        for (const [i, provider] of plan.entries()) {
          const run = yield* o.startRun({ threadId: thread.id, provider, message: `step ${i + 1}`, wait: true })
          expect(run.status).toBe("completed")
        }
        const view = yield* o.getThread(thread.id)
        expect(view.providerThreads).toHaveLength(2)
        expect(coverageLines(view)).toEqual(["alpha native 1,2,3,4,5,9 handoffs 6-8", "beta native 6,7,8 handoffs 1-5"])
        const [c1, l1] = view.providerThreads
        const h1 = view.handoffs.find((h) => h.toProviderThreadId === l1!.id)!
        const h2 = view.handoffs.find((h) => h.toProviderThreadId === c1!.id)!
        expect(h1.strategy).toBe("full_thread_summary")
        expect(h1.kind).toBe("portable_context")
        expect(h1.targetRunId).toBe(view.runs[5]!.id)
        expect(h2.strategy).toBe("delta_since_target_last_seen")
        expect(h2.kind).toBe("delta_context")
        expect(h2.targetRunId).toBe(view.runs[8]!.id)
        expect(h2.fromProviderThreadIds).toEqual([l1!.id])
        expect(view.runs.map((r) => r.contextResolution)).toEqual([
          "none",
          "none",
          "none",
          "none",
          "none",
          "portable",
          "none",
          "none",
          "delta"
        ])
        expect(view.runs[5]!.contextHandoffId).toBe(h1.id)
        expect(view.runs[8]!.providerThreadId).toBe(c1!.id)
        // Transfers are consumed by the runs that used them.
        for (const h of [h1, h2]) {
          const transfer = view.transfers.find((t) => t.id === h.transferId)!
          expect(transfer.status).toBe("consumed")
          expect(transfer.consumedByRunId).toBe(h.targetRunId)
        }
        // handoff.get returns the artifact; the run received it as its own context block.
        const fetched = yield* o.getHandoff(h2.id)
        expect(fetched.summaryText).toBe(h2.summaryText)
        const block = view.runs[8]!.items.find((i) => i.type === "handoff_context")
        expect(block && "text" in block ? block.text : "").toBe(h2.summaryText)
        // The user's message is the run's `message`, once: not repeated as an item.
        expect(view.runs[8]!.message).toBe("step 9")
        expect(view.runs[8]!.items.some((i) => i.type === "user_message")).toBe(false)
      })
    )
  }, 60_000)

  it("lets alpha recall a fact told only to beta, and not a fact never told", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "hello", wait: true })
        yield* o.startRun({ threadId: thread.id, provider: beta, message: "the codeword is PAPAYA", wait: true })
        const back = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "[[recall:PAPAYA]] [[recall:MANGO]]",
          wait: true
        })
        expect(back.contextResolution).toBe("delta")
        expect(reply(back)).toContain("recall:PAPAYA=yes")
        expect(reply(back)).toContain("recall:MANGO=no")
      })
    )
  })

  it("falls back to a full summary in a new provider thread when resume fails, and records why", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "the colour is TEAL [[forget]]",
          wait: true
        })
        yield* o.startRun({ threadId: thread.id, provider: beta, message: "the shape is CUBE", wait: true })
        const back = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "[[recall:TEAL]] [[recall:CUBE]]",
          wait: true
        })
        expect(back.status).toBe("completed")
        expect(back.contextResolution).toBe("portable")
        expect(reply(back)).toContain("recall:TEAL=yes")
        expect(reply(back)).toContain("recall:CUBE=yes")
        const view = yield* o.getThread(thread.id)
        const alphaThreads = view.providerThreads.filter((pt) => pt.provider === "alpha")
        expect(alphaThreads).toHaveLength(2)
        expect(alphaThreads[0]!.status).toBe("stale")
        expect(alphaThreads[0]!.statusReason).toContain("resume_failed")
        const handoff = view.handoffs.find((h) => h.id === back.contextHandoffId)!
        expect(handoff.strategy).toBe("full_thread_summary")
        expect(handoff.coveredRunOrdinals).toEqual({ from: 1, to: 2 })
        expect(handoff.toProviderThreadId).toBe(alphaThreads[1]!.id)
        const transfer = view.transfers.find((t) => t.id === handoff.transferId)!
        expect(transfer.reasons).toContain("resume_failed")
        // The delta built for the old thread was superseded, not edited.
        const superseded = view.handoffs.filter((h) => h.status === "superseded")
        expect(superseded).toHaveLength(1)
        expect(superseded[0]!.supersededBy).toBe(handoff.id)
        expect(superseded[0]!.strategy).toBe("delta_since_target_last_seen")
      })
    )
  })

  it("starts a fresh provider thread on a clean-context request, with the reason recorded", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one", wait: true })
        const clean = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "two",
          cleanContext: true,
          wait: true
        })
        expect(clean.contextResolution).toBe("portable")
        const view = yield* o.getThread(thread.id)
        expect(view.providerThreads.map((pt) => pt.status)).toEqual(["stale", "idle"])
        const transfer = view.transfers.find((t) => t.id === view.handoffs[0]!.transferId)!
        expect(transfer.reasons).toEqual(["clean_context"])
      })
    )
  })

  it("never lets hidden reasoning leave its provider, at any budget", async () => {
    // The scripted provider's reasoning text is derived from the directive's argument
    // (`secret-` + the argument reversed), so the secret is not in the user's message.
    const word = "ORCHID-42"
    const secret = `secret-${[...word].reverse().join("")}`
    for (const budget of [1024, 16_000, 64_000]) {
      await inTempRuntime((o, _actors, dir) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          yield* o.startRun({
            threadId: thread.id,
            provider: alpha,
            message: `plan it [[reason:${word}]]`,
            wait: true
          })
          yield* o.startRun({
            threadId: thread.id,
            provider: beta,
            message: "continue [[cmd:npm test:1]]",
            wait: true,
            handoffBudgetTokens: budget
          })
          yield* o.startRun({
            threadId: thread.id,
            provider: alpha,
            message: "back",
            wait: true,
            handoffBudgetTokens: budget
          })
          const view = yield* o.getThread(thread.id)
          expect(view.handoffs.length).toBe(2)
          // The reasoning item exists on the run that produced it…
          expect(view.runs[0]!.items.find((i) => i.type === "reasoning")).toMatchObject({ text: secret })
          // …and nowhere in any handoff, its payload, or what other providers received.
          for (const h of view.handoffs) {
            expect(JSON.stringify(h)).not.toContain(secret)
            expect(h.tokenEstimate).toBeLessThanOrEqual(budget)
          }
          for (const run of view.runs.slice(1)) expect(JSON.stringify(run.items)).not.toContain(secret)
          expect(allText(join(dir, "providers", "beta"))).not.toContain(secret)
        })
      )
    }
  }, 60_000)
})

describe("provider-made summaries", () => {
  const config = (dir: string) => {
    const path = join(dir, "providers.json")
    writeFileSync(
      path,
      JSON.stringify({
        providers: {
          alpha: { driver: "scripted", capabilities: { fork: "at_turn", rollback: "native", summarise: true } },
          beta: { driver: "scripted", capabilities: { fork: "none", rollback: "none" } }
        }
      })
    )
    return path
  }

  const switchOnce = (o: Orchestrator["Type"]) =>
    Effect.gen(function* () {
      const thread = yield* o.createThread({})
      yield* o.startRun({ threadId: thread.id, provider: alpha, message: "the goal is a PARSER", wait: true })
      const run = yield* o.startRun({ threadId: thread.id, provider: beta, message: "[[recall:PARSER]]", wait: true })
      return { run, view: yield* o.getThread(thread.id) }
    })

  it("lets the leaving provider write the handoff and records it", async () => {
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const { run, view } = yield* switchOnce(o)
          const handoff = view.handoffs[0]!
          expect(handoff.createdByProvider).toBe("alpha")
          expect(handoff.summaryText).toContain("alpha")
          expect(reply(run)).toContain("recall:PARSER=yes")
        }),
      (dir) => ({ configFile: config(dir), summarySource: { _tag: "leaving" } })
    )
  })

  it("falls back to the local summariser when the summary provider times out, or cannot summarise", async () => {
    for (const source of [{ _tag: "leaving" } as const, { _tag: "entering" } as const]) {
      await inTempRuntime(
        (o) =>
          Effect.gen(function* () {
            const t0 = Date.now()
            const { run, view } = yield* switchOnce(o)
            expect(view.handoffs[0]!.createdByProvider).toBeNull()
            expect(reply(run)).toContain("recall:PARSER=yes")
            expect(Date.now() - t0).toBeLessThan(15_000)
          }),
        (dir) => ({
          configFile: config(dir),
          summarySource: source,
          summaryTimeoutMs: 300,
          // alpha (leaving) hangs when asked to summarise; beta (entering) cannot summarise.
          mapAdapter: (adapter) => ({
            ...adapter,
            openSession: (options) =>
              Effect.map(adapter.openSession(options), (handle) => ({ ...handle, summarise: () => Effect.never }))
          })
        })
      )
    }
  }, 60_000)
})
