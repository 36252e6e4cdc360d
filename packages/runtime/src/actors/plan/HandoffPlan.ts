/**
 * Context crossing into a run: the transfer and the handoff that carry it, the
 * handoffs delivered beside the run's own (a merged fork's work, a subagent's result),
 * and a pending handoff's summary once it is settled.
 */
import type {
  ContextHandoff,
  ContextTransfer,
  HandoffDelivery,
  ProviderName,
  ProviderThreadHead,
  ProviderThreadId,
  Run,
  RunId,
  ThreadEvent
} from "@skein/domain"
import {
  HandoffRecorded,
  TransferRecorded,
  TurnItemRecorded,
  makeContextHandoff,
  makeContextTransfer,
  makeId
} from "@skein/domain"
import type { BuiltHandoff } from "../../context/HandoffBuilder.js"
import { estimateTokens } from "../../context/Tokens.js"
import type { ThreadState } from "../../store/ThreadState.js"
import { fullHandoff, isRolledBackOrdinal, itemsOf, needRuns, runAt } from "../../store/ThreadState.js"
import type { SummaryOutcome } from "../ThreadProtocol.js"
import type { HandoffDecision, ProviderInfo, RunDecision } from "./RunDecision.js"
import { handoffItem, item } from "./ItemPlan.js"

/** The provider threads that natively served the runs of a range. */
const servingProviderThreads = (state: ThreadState, from: number, to: number): Array<ProviderThreadId> => {
  const ids = new Set<ProviderThreadId>()
  needRuns(state, from, to, false)
  for (let ordinal = from; ordinal <= to; ordinal++) {
    const id = runAt(state, ordinal)?.providerThreadId
    if (id) ids.add(id)
  }
  return [...ids]
}

/** The newest live run before `ordinal`: the source point of a transfer into it. */
const latestLiveRunBefore = (state: ThreadState, ordinal: number): Run | undefined => {
  for (let o = Math.min(ordinal - 1, state.runCount); o >= 1; o--) {
    if (!isRolledBackOrdinal(state, o)) return runAt(state, o)
  }
  return undefined
}

/**
 * The transfer and handoff that carry context into run `runId` on `target`: the
 * transfer it resolves when there is one, a new one otherwise, and the handoff built
 * from `draft`, `pending` while a provider writes its summary (`summaryBy`).
 */
export const recordHandoff = (
  state: ThreadState,
  options: {
    readonly runId: RunId
    readonly ordinal: number
    readonly target: ProviderThreadHead
    readonly provider: ProviderInfo
    readonly decision: HandoffDecision
    readonly draft: BuiltHandoff
    /** A provider will write the summary: the handoff stays `pending` until it has. */
    readonly summaryBy: ProviderName | null
    readonly existingTransfer: ContextTransfer | null
    readonly now: string
  }
): { readonly transfer: ContextTransfer; readonly handoff: ContextHandoff } => {
  const spec = options.decision
  const handoffId = makeId.handoff()
  const source = latestLiveRunBefore(state, options.ordinal)
  const resolution =
    spec.kind === "delta_context"
      ? ({ strategy: "delta_context", contextHandoffId: handoffId } as const)
      : spec.kind === "checkpoint_context"
        ? ({ strategy: "checkpoint_context", contextHandoffId: handoffId } as const)
        : ({ strategy: "portable_context", contextHandoffId: handoffId } as const)
  const transfer: ContextTransfer = options.existingTransfer
    ? {
        ...options.existingTransfer,
        status: "resolved_portable",
        resolution,
        reasons: [...spec.reasons],
        consumedByRunId: options.runId
      }
    : makeContextTransfer({
        type: "provider_handoff",
        sourceThreadId: state.thread.id,
        targetThreadId: state.thread.id,
        sourcePoint: {
          threadId: state.thread.id,
          ...(source ? { runId: source.id, runOrdinal: source.ordinal } : {})
        },
        basePoint:
          spec._tag === "delta" && options.target.lastRunOrdinal !== null
            ? {
                threadId: state.thread.id,
                runOrdinal: options.target.lastRunOrdinal,
                ...(runAt(state, options.target.lastRunOrdinal)
                  ? { runId: runAt(state, options.target.lastRunOrdinal)!.id }
                  : {})
              }
            : null,
        sourceProvider: source?.provider ?? null,
        targetProvider: options.provider.name,
        status: "resolved_portable",
        resolution,
        reasons: [...spec.reasons],
        createdBy: "system",
        createdAt: options.now,
        consumedByRunId: options.runId
      })
  const handoff = makeContextHandoff({
    id: handoffId,
    transferId: transfer.id,
    threadId: state.thread.id,
    targetRunId: options.runId,
    kind: spec.kind,
    strategy: spec.strategy,
    fromProviderThreadIds: servingProviderThreads(state, spec.covered.from, spec.covered.to),
    toProviderThreadId: options.target.id,
    coveredRunOrdinals: spec.covered,
    payload: options.draft.payload,
    summaryText: options.draft.summaryText,
    tokenEstimate: options.draft.tokenEstimate,
    budgetTokens: options.draft.budgetTokens,
    status: options.summaryBy === null ? "ready" : "pending",
    createdAt: options.now
  })
  return { transfer, handoff }
}

/**
 * The handoffs a run delivers beside its own (a merged fork's work, a subagent's
 * result): one per incoming transfer, each resolved for this run, with its block
 * recorded on the run.
 */
export const recordExtras = (
  state: ThreadState,
  input: {
    readonly runId: RunId
    readonly target: ProviderThreadHead
    readonly decision: RunDecision
    readonly built: ReadonlyArray<BuiltHandoff>
    readonly delivery: HandoffDelivery | null
    readonly firstSeq: number
    readonly now: string
  }
): { readonly events: Array<ThreadEvent>; readonly handoffs: Array<ContextHandoff> } => {
  const events: Array<ThreadEvent> = []
  const handoffs: Array<ContextHandoff> = []
  input.decision.extras.forEach((extra, i) => {
    const draft = input.built[i]!
    const handoffId = makeId.handoff()
    const handoff = makeContextHandoff({
      id: handoffId,
      transferId: extra.transfer.id,
      // It tells about another thread's runs: never part of this thread's coverage.
      threadId: extra.transfer.sourceThreadId,
      targetRunId: input.runId,
      kind: extra.kind,
      strategy: extra.strategy,
      fromProviderThreadIds: [],
      toProviderThreadId: input.target.id,
      coveredRunOrdinals: { from: extra.material.from, to: extra.material.to },
      payload: draft.payload,
      summaryText: draft.summaryText,
      tokenEstimate: draft.tokenEstimate,
      budgetTokens: draft.budgetTokens,
      createdAt: input.now
    })
    handoffs.push(handoff)
    events.push(
      new TransferRecorded({
        transfer: {
          ...extra.transfer,
          status: "resolved_portable",
          resolution: { strategy: "delta_context", contextHandoffId: handoffId },
          consumedByRunId: input.runId
        }
      }),
      new HandoffRecorded({ handoff })
    )
    if (input.delivery) {
      events.push(handoffItem(state, input.runId, input.firstSeq + i, handoff, input.delivery, input.now))
    }
  })
  return { events, handoffs }
}

/**
 * The pending handoff's summary is settled: the provider's text, or, when it could
 * not write one, the local summariser's (kept from the start), with an error item on
 * the run saying why. The handoff becomes `ready`, and its block is recorded on the
 * run as the provider will receive it.
 */
export const planSummary = (
  state: ThreadState,
  input: {
    readonly runId: RunId
    readonly handoffId: ContextHandoff["id"]
    readonly summary: SummaryOutcome
    readonly delivery: HandoffDelivery
    readonly now: string
  }
): { readonly events: ReadonlyArray<ThreadEvent>; readonly handoff: ContextHandoff } | undefined => {
  const pending = fullHandoff(state, input.handoffId)
  if (pending === undefined || pending.status !== "pending" || pending.targetRunId !== input.runId) return undefined
  const { summary } = input
  const handoff: ContextHandoff = {
    ...pending,
    status: "ready",
    ...(summary._tag === "Written"
      ? { summaryText: summary.text, tokenEstimate: estimateTokens(summary.text), createdByProvider: summary.provider }
      : {}),
    updatedAt: input.now
  }
  const seq = itemsOf(state, input.runId).length
  const events: Array<ThreadEvent> = [new HandoffRecorded({ handoff })]
  if (summary._tag === "Failed") {
    const message = `${summary.provider} could not write the handoff summary (${summary.detail}); the local summariser's summary was delivered instead`
    events.push(
      new TurnItemRecorded({
        item: item(state, input.runId, seq, { type: "error", message, code: "summary_fallback" }, input.now)
      })
    )
  }
  events.push(handoffItem(state, input.runId, seq + events.length - 1, handoff, input.delivery, input.now))
  return { handoff, events }
}
