/**
 * Context core figures: resolving the start context and building the delta handoff for
 * a 20-run gap must cost the same on a 100-run and a 10,000-run thread; a full summary
 * of a 1,000-run thread at the default budget must stay under 100 ms.
 */
import type { AppThread, Checkpoint, ProviderThread, Run, TurnItem, TurnItemContent } from "@skein/domain"
import {
  CheckpointId,
  defaultCapabilities,
  ProviderName,
  ProviderThreadId,
  RunId,
  ThreadId,
  TurnItemId
} from "@skein/domain"
import type { ThreadState } from "@skein/runtime"
import {
  buildHandoffPayload,
  defaultStalenessPolicy,
  emptyThreadState,
  putProviderThread,
  putRun,
  resolveStartContext
} from "@skein/runtime"
import { percentile } from "./stats.js"

const AT = "2026-01-01T00:00:00.000Z"
const GAP = 20
const alpha = ProviderName.make("alpha")
const beta = ProviderName.make("beta")

const itemsFor = (i: number): ReadonlyArray<TurnItemContent> => [
  { type: "user_message", text: `Please continue with step ${i} of the importer; keep the tests green.` },
  { type: "reasoning", text: `private reasoning about step ${i}` },
  {
    type: "assistant_message",
    text: `Done with step ${i}: updated the module and ran the tests.\nDecision: keep approach ${i}`
  },
  { type: "command_execution", command: `npm test -- part${i % 40}`, exitCode: i % 97 === 0 ? 1 : 0, output: "ok\n" },
  { type: "file_change", path: `src/module${i % 300}.ts`, kind: "modify", summary: `edit for step ${i}` },
  ...(i % 50 === 0
    ? [{ type: "plan" as const, steps: [{ text: `plan at ${i}`, status: "in_progress" as const }] }]
    : [])
]

const providerThread = (id: string, provider: ProviderName, ordinals: ReadonlyArray<number>): ProviderThread => ({
  id: ProviderThreadId.make(id),
  threadId: ThreadId.make("thr_bench"),
  provider,
  driver: "scripted",
  nativeRef: id,
  nativeRefStrength: "strong",
  firstRunOrdinal: ordinals[0] ?? null,
  lastRunOrdinal: ordinals[ordinals.length - 1] ?? null,
  handoffIds: [],
  coverage: { nativeRunOrdinals: ordinals, handoffIds: [] },
  nativeTurns: [],
  settings: { model: null, runtimeMode: "default" },
  status: "idle",
  statusReason: null,
  createdAt: AT,
  updatedAt: AT
})

/** `runs` runs: alpha served all but the last GAP, beta the last GAP; a checkpoint after each run. */
const threadOf = (runs: number): ThreadState => {
  const threadId = ThreadId.make("thr_bench")
  const thread: AppThread = {
    id: threadId,
    title: "bench",
    workspace: null,
    lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: threadId },
    createdAt: AT,
    updatedAt: AT
  }
  const state = emptyThreadState(thread)
  for (let i = 1; i <= runs; i++) {
    const id = RunId.make(`run_${i}`)
    const run: Run = {
      id,
      threadId,
      ordinal: i,
      provider: i > runs - GAP ? beta : alpha,
      model: null,
      message: `Please continue with step ${i} of the importer; keep the tests green.`,
      status: "completed",
      providerThreadId: null,
      contextHandoffId: null,
      contextResolution: null,
      failure: null,
      commandId: null,
      createdAt: AT,
      startedAt: AT,
      completedAt: AT
    }
    putRun(state, run)
    state.items.set(
      id,
      itemsFor(i).map((content, seq): TurnItem => ({
        ...content,
        id: TurnItemId.make(`itm_${i}_${seq}`),
        threadId,
        runId: id,
        seq,
        createdAt: AT
      }))
    )
    const checkpoint: Checkpoint = {
      id: CheckpointId.make(`chk_${i}`),
      threadId,
      runId: id,
      runOrdinal: i,
      kind: "logical",
      gitRef: null,
      treeSha: null,
      diffSummary: [{ path: `src/module${i % 300}.ts`, change: "modify", additions: 2, deletions: 1 }],
      status: "ready",
      createdAt: AT
    }
    state.checkpoints.set(checkpoint.id, checkpoint)
  }
  const a = providerThread(
    "pth_alpha",
    alpha,
    Array.from({ length: runs - GAP }, (_, k) => k + 1)
  )
  const b = providerThread(
    "pth_beta",
    beta,
    Array.from({ length: GAP }, (_, k) => runs - GAP + k + 1)
  )
  putProviderThread(state, a)
  putProviderThread(state, b)
  return state
}

const p50 = (samples: ReadonlyArray<number>): number => percentile(samples, 50)

const timeIt = (iterations: number, f: () => void): number => {
  for (let i = 0; i < Math.min(10, iterations); i++) f() // warm-up
  const samples: Array<number> = []
  for (let i = 0; i < iterations; i++) {
    const start = performance.now()
    f()
    samples.push(performance.now() - start)
  }
  return p50(samples)
}

const resolveAndBuildDelta = (state: ThreadState): void => {
  const resolution = resolveStartContext({
    state,
    provider: alpha,
    capabilities: defaultCapabilities(),
    settings: { model: null, runtimeMode: "default" },
    cleanContext: false,
    resumeFailed: false,
    budgetTokens: 16_000,
    policy: defaultStalenessPolicy
  })
  if (resolution._tag !== "delta" || resolution.covered.to - resolution.covered.from + 1 !== GAP) {
    throw new Error(`expected a ${GAP}-run delta, got ${resolution._tag}`)
  }
  buildHandoffPayload(state, {
    fromOrdinal: resolution.covered.from,
    toOrdinal: resolution.covered.to,
    strategy: resolution.strategy,
    budgetTokens: 16_000
  })
}

export async function run(): Promise<void> {
  console.log(`context: resolve + delta handoff for a ${GAP}-run gap (p50 of 300)`)
  const figures = new Map<number, number>()
  const states = [100, 1_000, 10_000].map((runs) => [runs, threadOf(runs)] as const)
  // Warm the JIT on every size first, so that the first size measured is not penalised.
  for (let i = 0; i < 100; i++) for (const [, state] of states) resolveAndBuildDelta(state)
  // Sizes take turns, so that GC and machine noise fall on all of them alike.
  const samples = new Map<number, Array<number>>(states.map(([runs]) => [runs, []]))
  for (let i = 0; i < 300; i++) {
    for (const [runs, state] of states) {
      const start = performance.now()
      resolveAndBuildDelta(state)
      samples.get(runs)!.push(performance.now() - start)
    }
  }
  for (const [runs] of states) {
    const ms = p50(samples.get(runs)!)
    figures.set(runs, ms)
    console.log(`  ${String(runs).padStart(6)} runs: ${ms.toFixed(3)} ms`)
  }
  const ratio = figures.get(10_000)! / figures.get(100)!
  const worst = Math.max(...figures.values())
  console.log(
    `  10k/100 ratio ${ratio.toFixed(2)} (goal ≤ 1.5) ${ratio <= 1.5 ? "ok" : "MISSED"}; ` +
      `worst ${worst.toFixed(3)} ms (goal < 20 ms) ${worst < 20 ? "ok" : "MISSED"}`
  )

  const thousand = threadOf(1_000)
  let tokens = 0
  const full = timeIt(20, () => {
    tokens = buildHandoffPayload(thousand, {
      fromOrdinal: 1,
      toOrdinal: 1_000,
      strategy: "full_thread_summary"
    }).tokenEstimate
  })
  console.log(
    `context: full summary of a 1,000-run thread at 16,000 tokens: ${full.toFixed(2)} ms (p50 of 20, ` +
      `${tokens} tokens; goal < 100 ms) ${full < 100 ? "ok" : "MISSED"}`
  )
}
