/**
 * Test helpers: build ThreadState values directly, and simulate what the thread actor
 * does with a start-context resolution (the lead's actor follows the same steps).
 */
import type {
  AppThread,
  Checkpoint,
  ContextHandoff,
  ContextHandoffId,
  ProviderCapabilities,
  ProviderThread,
  Run,
  RunFailure,
  RunId,
  RunStatus,
  SettingsFingerprint,
  TurnItem,
  TurnItemContent
} from "@skein/domain"
import {
  CheckpointId,
  ContextHandoffId as HandoffIdSchema,
  ContextTransferId,
  defaultCapabilities,
  ProviderName,
  ProviderThreadId,
  RunId as RunIdSchema,
  ThreadId,
  TurnItemId
} from "@skein/domain"
import type { StalenessPolicy, ContextDecision } from "../../src/context/index.js"
import {
  buildHandoffPayload,
  defaultStalenessPolicy,
  newProviderThread,
  resolveStartContext,
  withServedRun
} from "../../src/context/index.js"
import type { ThreadState } from "../../src/store/ThreadState.js"
import { emptyThreadState, fullProviderThread, handoffHeadById, runAt } from "../../src/store/ThreadState.js"
import { putHandoff, putProviderThread, putRun } from "../../src/store/Projection.js"

export const AT = "2026-01-01T00:00:00.000Z"
export const THREAD = ThreadId.make("thr_test")
export const settings = (model: string | null = null, runtimeMode = "default"): SettingsFingerprint => ({
  model,
  runtimeMode
})

export const newState = (): ThreadState => {
  const thread: AppThread = {
    id: THREAD,
    title: "test thread",
    workspace: null,
    lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: THREAD },
    createdAt: AT,
    updatedAt: AT
  }
  return emptyThreadState(thread)
}

export const p = (name: string): ProviderName => ProviderName.make(name)

export interface RunSpec {
  readonly provider: string
  readonly message: string
  readonly items?: ReadonlyArray<TurnItemContent>
  readonly status?: RunStatus
  readonly failure?: RunFailure
}

/** Appends a run (and its items, the user message first) as the reducer would. Mutates. */
export const addRun = (state: ThreadState, spec: RunSpec): Run => {
  const ordinal = state.runCount + 1
  const id = RunIdSchema.make(`run_${ordinal}`)
  const run: Run = {
    id,
    threadId: THREAD,
    ordinal,
    provider: p(spec.provider),
    model: null,
    message: spec.message,
    status: spec.status ?? "completed",
    providerThreadId: null,
    contextHandoffId: null,
    contextResolution: null,
    failure: spec.failure ?? null,
    commandId: null,
    createdAt: AT,
    startedAt: AT,
    completedAt: AT
  }
  putRun(state, run)
  setItems(state, id, [{ type: "user_message", text: spec.message }, ...(spec.items ?? [])])
  return run
}

export const setItems = (state: ThreadState, runId: RunId, contents: ReadonlyArray<TurnItemContent>): void => {
  state.items.set(
    runId,
    contents.map((content, seq): TurnItem => ({
      ...content,
      id: TurnItemId.make(`itm_${runId}_${seq}`),
      threadId: THREAD,
      runId,
      seq,
      createdAt: AT
    }))
  )
}

export const addCheckpoint = (state: ThreadState, run: Run, paths: ReadonlyArray<string>): Checkpoint => {
  const checkpoint: Checkpoint = {
    id: CheckpointId.make(`chk_${run.ordinal}`),
    threadId: THREAD,
    runId: run.id,
    runOrdinal: run.ordinal,
    kind: "git",
    gitRef: `refs/skein/checkpoints/${run.ordinal}`,
    treeSha: "abcdef0123456789",
    diffSummary: paths.map((path) => ({ path, change: "modify" as const, additions: 3, deletions: 1 })),
    status: "ready",
    createdAt: AT
  }
  state.checkpoints.set(checkpoint.id, checkpoint)
  return checkpoint
}

export interface SimulateOptions extends RunSpec {
  readonly capabilities?: ProviderCapabilities
  readonly settings?: SettingsFingerprint
  readonly cleanContext?: boolean
  readonly resumeFailed?: boolean
  readonly budgetTokens?: number
  readonly policy?: StalenessPolicy
}

export interface Simulated {
  readonly resolution: ContextDecision
  readonly run: Run
  readonly providerThread: ProviderThread | null
  readonly handoff: ContextHandoff | null
}

/**
 * One run as the actor drives it: queue the run, resolve its start context, act on the
 * resolution (retire / create the provider thread, build and record the handoff), then
 * record the run's items and outcome and the provider thread's new coverage. Mutates.
 */
/** The resolver input the actor would build for a run on `options.provider`, with its defaults. */
export const resolveInput = (
  state: ThreadState,
  options: Omit<SimulateOptions, "message">
): Parameters<typeof resolveStartContext>[0] => ({
  state,
  provider: p(options.provider),
  capabilities: options.capabilities ?? defaultCapabilities(),
  settings: options.settings ?? settings(),
  cleanContext: options.cleanContext ?? false,
  resumeFailed: options.resumeFailed ?? false,
  budgetTokens: options.budgetTokens ?? 16_000,
  policy: options.policy ?? defaultStalenessPolicy
})

export const simulateRun = (state: ThreadState, options: SimulateOptions): Simulated => {
  const run = addRun(state, { ...options, status: "queued" })
  const resolution = resolveStartContext(resolveInput(state, options))
  const finish = (patch: Partial<Run>): Run => {
    const ended: Run = { ...run, status: options.status ?? "completed", ...patch }
    putRun(state, ended)
    return ended
  }
  if (resolution._tag === "unsupported") {
    return {
      resolution,
      run: finish({ status: "failed", failure: { reason: "unsupported_context", message: resolution.detail } }),
      providerThread: null,
      handoff: null
    }
  }
  if (resolution._tag === "native") throw new Error("native is not produced for plain runs")

  const replaces = resolution._tag === "none" || resolution._tag === "portable" ? resolution.replaces : null
  if (replaces !== null) {
    putProviderThread(state, {
      ...fullProviderThread(state, replaces.id)!,
      status: "stale",
      statusReason: resolution.reasons.join(",")
    })
  }
  let pt: ProviderThread =
    (resolution.providerThread && fullProviderThread(state, resolution.providerThread.id)) ??
    newProviderThread({
      id: ProviderThreadId.make(`pth_${options.provider}_${state.providerThreads.size + 1}`),
      threadId: THREAD,
      provider: p(options.provider),
      driver: "scripted",
      settings: options.settings ?? settings(),
      at: AT
    })
  if (resolution.providerThread === null) putProviderThread(state, pt)

  let handoff: ContextHandoff | null = null
  if (resolution._tag === "delta" || resolution._tag === "portable") {
    const built = buildHandoffPayload(state, {
      fromOrdinal: resolution.covered.from,
      toOrdinal: resolution.covered.to,
      strategy: resolution.strategy,
      budgetTokens: options.budgetTokens ?? 16_000
    })
    const id: ContextHandoffId = HandoffIdSchema.make(`hof_${state.handoffs.size + 1}`)
    handoff = {
      id,
      transferId: ContextTransferId.make(`xfr_${state.handoffs.size + 1}`),
      threadId: THREAD,
      targetRunId: run.id,
      kind: resolution._tag === "delta" ? "delta_context" : "portable_context",
      strategy: resolution.strategy,
      fromProviderThreadIds: [],
      toProviderThreadId: pt.id,
      coveredRunOrdinals: resolution.covered,
      payload: built.payload,
      summaryText: built.summaryText,
      tokenEstimate: built.tokenEstimate,
      budgetTokens: built.budgetTokens,
      status: "ready",
      supersededBy: null,
      createdByProvider: null,
      createdAt: AT,
      updatedAt: AT
    }
    putHandoff(state, handoff)
  }
  pt = { ...withServedRun(pt, { ordinal: run.ordinal, handoffId: handoff?.id ?? null, at: AT }), status: "idle" }
  putProviderThread(state, pt)
  const ended = finish({
    providerThreadId: pt.id,
    contextHandoffId: handoff?.id ?? null,
    contextResolution: resolution._tag
  })
  return { resolution, run: ended, providerThread: pt, handoff }
}

/** How many times each ordinal is covered by the provider thread (native + live handoff ranges). */
export const coverageMultiplicity = (state: ThreadState, pt: ProviderThread): Map<number, number> => {
  const counts = new Map<number, number>()
  const bump = (o: number) => counts.set(o, (counts.get(o) ?? 0) + 1)
  for (const o of pt.coverage.nativeRunOrdinals) bump(o)
  for (const id of pt.coverage.handoffIds) {
    const h = handoffHeadById(state, id)
    if (h === undefined || h.status === "superseded") continue
    for (let o = h.coveredRunOrdinals.from; o <= h.coveredRunOrdinals.to; o++) {
      // A handoff range spans rolled-back or non-terminal runs it did not describe.
      const run = runAt(state, o)
      if (run && (run.status === "completed" || run.status === "failed" || run.status === "interrupted")) bump(o)
    }
  }
  return counts
}
