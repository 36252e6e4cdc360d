/**
 * A run's start: the run, its provider thread (reused, fresh, or the fallback when
 * resuming failed), the transfer and handoff when context must cross, and the native
 * ref its provider thread gets.
 */
import type {
  ContextHandoff,
  ProviderName,
  ProviderThread,
  ProviderThreadHead,
  ProviderThreadId,
  Run,
  RunId,
  ThreadEvent
} from "@skein/domain"
import {
  HandoffRecorded,
  ProviderThreadRecorded,
  RunStarted,
  RunUpdated,
  TransferRecorded,
  TurnItemRecorded,
  makeId
} from "@skein/domain"
import { newProviderThread } from "../../context/Coverage.js"
import type { BuiltHandoff } from "../../context/HandoffBuilder.js"
import type { ThreadState } from "../../store/ThreadState.js"
import {
  fullHandoff,
  fullProviderThread,
  itemsOf,
  openTransfers,
  runById,
  transferById
} from "../../store/ThreadState.js"
import type { RunContext } from "../ThreadProtocol.js"
import { unchecked } from "./Unchecked.js"
import { type ProviderInfo, type RunDecision, handoffOf, retiredBy } from "./RunDecision.js"
import { handoffItem, item } from "./ItemPlan.js"
import { recordExtras, recordHandoff } from "./HandoffPlan.js"

export interface StartPlan {
  /** The resolver's decision, as it was taken. */
  readonly decision: RunDecision
  readonly run: Run
  /** What the run's driver needs: provider thread, handoff and its delivery channel. */
  readonly context: RunContext
  readonly events: ReadonlyArray<ThreadEvent>
}

const freshProviderThread = (
  state: ThreadState,
  provider: ProviderInfo,
  model: string | null,
  now: string
): ProviderThread => ({
  ...newProviderThread({
    id: makeId.providerThread(),
    threadId: state.thread.id,
    provider: provider.name,
    driver: provider.driver,
    settings: { model, runtimeMode: provider.runtimeMode },
    at: now
  }),
  status: "active"
})

const retire = (pt: ProviderThread, reasons: ReadonlyArray<string>, now: string): ProviderThread => ({
  ...pt,
  status: "stale",
  statusReason: reasons.length > 0 ? reasons.join(", ") : "replaced by a fresh provider thread",
  updatedAt: now
})

/** What a run's start is planned from. */
interface StartInput {
  readonly message: string
  readonly model: string | null
  readonly commandId: Run["commandId"]
  readonly provider: ProviderInfo
  readonly decision: RunDecision
  readonly draft: BuiltHandoff | null
  /** One per `decision.extras`, in order. */
  readonly extras: ReadonlyArray<BuiltHandoff>
  readonly summaryBy: ProviderName | null
  /** The id its caller was given when it was queued; a new one otherwise. */
  readonly runId?: RunId | undefined
  readonly now: string
}

/** The run a start records, running on `providerThread`. */
const runningRun = (
  state: ThreadState,
  input: Pick<StartInput, "message" | "model" | "commandId" | "provider" | "decision" | "now">,
  at: {
    readonly runId: RunId
    readonly ordinal: number
    readonly providerThread: ProviderThreadHead
    readonly handoff: ContextHandoff | null
  }
): Run => ({
  id: at.runId,
  threadId: state.thread.id,
  ordinal: at.ordinal,
  provider: input.provider.name,
  model: input.model,
  message: input.message,
  status: "running",
  providerThreadId: at.providerThread.id,
  contextHandoffId: at.handoff?.id ?? null,
  contextResolution: input.decision._tag,
  failure: null,
  commandId: input.commandId,
  createdAt: input.now,
  startedAt: input.now,
  completedAt: null
})

/**
 * Start a run: the run, its provider thread, and the transfer + handoff when context
 * must cross. `draft` is the local summariser's handoff for the decision; when a
 * provider is to write the summary (`summaryBy`), the handoff is recorded `pending`
 * and its block is recorded once that summary is in (`planSummary`).
 */
export const planRunStart = (state: ThreadState, input: StartInput): StartPlan => {
  const { decision, now, provider } = input
  const ordinal = state.runCount + 1
  const runId = input.runId ?? makeId.run()
  const events: Array<ThreadEvent> = []
  const retired = retiredBy(decision)
  if (retired) {
    const whole = fullProviderThread(state, retired.id)!
    events.push(new ProviderThreadRecorded({ providerThread: retire(whole, decision.reasons, now) }))
  }
  // A reused provider thread is not rewritten here: its record only changes when the
  // run ends (its size grows with the history, and this is the dispatch path).
  const fresh = decision.providerThread
    ? null
    : freshProviderThread(state, provider, input.model ?? provider.model, now)
  const providerThread: ProviderThreadHead = decision.providerThread ?? fresh!
  if (fresh) events.push(new ProviderThreadRecorded({ providerThread: fresh }))
  const spec = handoffOf(decision)
  let handoff: ContextHandoff | null = null
  if (spec && input.draft) {
    const recorded = recordHandoff(state, {
      runId,
      ordinal,
      target: providerThread,
      provider,
      decision: spec,
      draft: input.draft,
      summaryBy: input.summaryBy,
      existingTransfer: decision.resolves,
      now
    })
    handoff = recorded.handoff
    events.push(new TransferRecorded({ transfer: recorded.transfer }), new HandoffRecorded({ handoff }))
  } else if (decision.resolves) {
    // A native fork: the transfer is resolved once the provider has forked.
    events.push(new TransferRecorded({ transfer: { ...decision.resolves, consumedByRunId: runId } }))
  }
  const run = runningRun(state, input, { runId, ordinal, providerThread, handoff })
  events.push(new RunStarted({ run }, unchecked))
  events.push(
    new TurnItemRecorded({ item: item(state, runId, 0, { type: "user_message", text: input.message }, now) }, unchecked)
  )
  const delivery = spec?.delivery ?? provider.capabilities.handoffDelivery[0] ?? null
  let seq = 1
  if (handoff && delivery && handoff.status === "ready") {
    events.push(handoffItem(state, runId, seq++, handoff, delivery, now))
  }
  const extras = recordExtras(state, {
    runId,
    target: providerThread,
    decision,
    built: input.extras,
    delivery,
    firstSeq: seq,
    now
  })
  events.push(...extras.events)
  return {
    decision,
    run,
    context: {
      providerThread,
      handoff,
      extras: extras.handoffs,
      delivery,
      summaryBy: handoff?.status === "pending" ? input.summaryBy : null,
      fork: decision._tag === "native" ? decision.fork : null
    },
    events
  }
}

/**
 * Resuming the target failed: retire it, supersede the handoff meant for it, and
 * move the run to a new provider thread, with a full summary when there is history
 * (`decision`, taken again with `resumeFailed`).
 */
export const planResumeFallback = (
  state: ThreadState,
  input: {
    readonly runId: RunId
    readonly provider: ProviderInfo
    readonly decision: RunDecision
    readonly draft: BuiltHandoff | null
    readonly summaryBy: ProviderName | null
    readonly detail: string
    readonly now: string
  }
): StartPlan => {
  const { now } = input
  const run = runById(state, input.runId)!
  const failedThread = run.providerThreadId ? fullProviderThread(state, run.providerThreadId) : undefined
  const events: Array<ThreadEvent> = []
  if (failedThread) {
    events.push(
      new ProviderThreadRecorded({
        providerThread: {
          ...failedThread,
          status: "stale",
          statusReason: `resume_failed: ${input.detail}`,
          updatedAt: now
        }
      })
    )
  }
  const providerThread = freshProviderThread(state, input.provider, run.model ?? input.provider.model, now)
  events.push(new ProviderThreadRecorded({ providerThread }))
  const previous = run.contextHandoffId ? fullHandoff(state, run.contextHandoffId) : undefined
  const spec = handoffOf(input.decision)
  const recorded =
    spec && input.draft
      ? recordHandoff(state, {
          runId: run.id,
          ordinal: run.ordinal,
          target: providerThread,
          provider: input.provider,
          decision: spec,
          draft: input.draft,
          summaryBy: input.summaryBy,
          existingTransfer:
            input.decision.resolves ?? (previous ? (transferById(state, previous.transferId) ?? null) : null),
          now
        })
      : null
  if (previous) {
    events.push(
      new HandoffRecorded({
        handoff: { ...previous, status: "superseded", supersededBy: recorded?.handoff.id ?? null, updatedAt: now }
      })
    )
  }
  if (recorded) {
    events.push(
      new TransferRecorded({ transfer: recorded.transfer }),
      new HandoffRecorded({ handoff: recorded.handoff })
    )
  }
  const handoff = recorded?.handoff ?? null
  const updated: Run = {
    ...run,
    providerThreadId: providerThread.id,
    contextHandoffId: handoff?.id ?? null,
    contextResolution: input.decision._tag
  }
  events.push(new RunUpdated({ run: updated }))
  const delivery = spec?.delivery ?? null
  if (handoff && delivery && handoff.status === "ready") {
    events.push(handoffItem(state, run.id, itemsOf(state, run.id).length, handoff, delivery, now))
  }
  return {
    decision: input.decision,
    run: updated,
    context: {
      providerThread,
      handoff,
      extras: [],
      delivery,
      summaryBy: handoff?.status === "pending" ? input.summaryBy : null,
      fork: null
    },
    events
  }
}

/**
 * The run's provider thread got its native ref. When it came from forking the
 * source's native thread, the inherited transfer this run resolves is `resolved_native`.
 */
export const planBindNativeThread = (
  state: ThreadState,
  input: {
    readonly runId: RunId
    readonly providerThreadId: ProviderThreadId
    readonly nativeRef: string
    readonly strength: ProviderThread["nativeRefStrength"]
    readonly forked: boolean
    readonly now: string
  }
): ReadonlyArray<ThreadEvent> => {
  const { nativeRef, now } = input
  const pt = fullProviderThread(state, input.providerThreadId)
  if (!pt) return []
  const events: Array<ThreadEvent> = [
    new ProviderThreadRecorded({
      providerThread: { ...pt, nativeRef, nativeRefStrength: input.strength, updatedAt: now }
    })
  ]
  if (input.forked) {
    for (const transfer of openTransfers(state)) {
      if (transfer.consumedByRunId === input.runId && transfer.status === "pending") {
        events.push(
          new TransferRecorded({
            transfer: {
              ...transfer,
              status: "resolved_native",
              resolution: { strategy: "native_fork", providerThreadRef: nativeRef }
            }
          })
        )
      }
    }
  }
  return events
}
