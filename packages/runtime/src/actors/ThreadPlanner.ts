/**
 * The thread actor's functional core: given the thread's state and what happened,
 * the events to append. No I/O; the actor persists the events, then folds them in.
 */
import type {
  AppThread,
  Checkpoint,
  ThreadId,
  ContextHandoff,
  ContextTransfer,
  DiffEntry,
  OmittedFile,
  HandoffDelivery,
  ProviderCapabilities,
  ProviderName,
  ProviderThread,
  ProviderThreadHead,
  ProviderThreadId,
  Run,
  RunFailure,
  RunId,
  ThreadEvent,
  TurnItem,
  TurnItemContent,
  TurnUsage
} from "@skein/domain"
import {
  CheckpointRecorded,
  ThreadCreated,
  HandoffRecorded,
  makeContextHandoff,
  makeContextTransfer,
  makeId,
  ProviderThreadRecorded,
  ProviderThreadServed,
  RunEnded,
  RunStarted,
  RunUpdated,
  TransferRecorded,
  TurnItemRecorded
} from "@skein/domain"
import type { ContextDecision } from "../context/ContextResolver.js"
import { newProviderThread } from "../context/Coverage.js"
import type { BuiltHandoff } from "../context/HandoffBuilder.js"
import { estimateTokens } from "../context/Tokens.js"
import type { ThreadState } from "../store/ThreadState.js"
import {
  activeRun,
  fullHandoff,
  fullProviderThread,
  handoffHeadById,
  handoffsOfRun,
  isRolledBackOrdinal,
  itemsOf,
  needHandoffs,
  needRuns,
  openTransfers,
  providerThreadHead,
  runAt,
  runById,
  transferById
} from "../store/ThreadState.js"
import type { RunContext, SummaryOutcome } from "./ThreadProtocol.js"

/**
 * For `new E(props, unchecked)`: an event built only from the thread's stored state and
 * values the runtime made or checked itself, whose constructor check would find
 * nothing. The run driver checks the provider's turn ref and usage; a run's message,
 * model and command id were checked with the command that asked for the run (InputCheck,
 * against `run.start`'s payload schema, which is stricter than the run's), and an
 * agent's spawn prompt is a string its driver decoded. The store does not check an
 * event's fields again, so what a provider reports as turn items stays checked here. A
 * run's end builds three such events and its start two; checking them cost 0.1 ms of a
 * real agent's turn on cold caches at the end, and about as much at the start.
 */
const unchecked = true

/** What the runtime knows of a provider instance when planning. */
export interface ProviderInfo {
  readonly name: ProviderName
  readonly driver: string
  readonly capabilities: ProviderCapabilities
  readonly runtimeMode: string
  readonly model: string | null
}

/** The decisions a run can be planned from (an `unsupported` one is refused before). */
export type RunDecision = Exclude<ContextDecision, { readonly _tag: "unsupported" }>

export interface StartPlan {
  /** The resolver's decision, as it was taken. */
  readonly decision: RunDecision
  readonly run: Run
  /** What the run's driver needs: provider thread, handoff and its delivery channel. */
  readonly context: RunContext
  readonly events: ReadonlyArray<ThreadEvent>
}

/** A provider thread the decision retires (marked stale with its reasons). */
const retiredBy = (decision: RunDecision): ProviderThreadHead | null =>
  decision._tag === "none" || decision._tag === "portable" || decision._tag === "native" ? decision.replaces : null

/** The handoff part of a decision, when it has one. */
const handoffOf = (decision: RunDecision) =>
  decision._tag === "delta" || decision._tag === "portable" ? decision : null

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

const recordHandoff = (
  state: ThreadState,
  options: {
    readonly runId: RunId
    readonly ordinal: number
    readonly target: ProviderThreadHead
    readonly provider: ProviderInfo
    readonly decision: RunDecision & { readonly _tag: "delta" | "portable" }
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

const retire = (pt: ProviderThread, reasons: ReadonlyArray<string>, now: string): ProviderThread => ({
  ...pt,
  status: "stale",
  statusReason: reasons.length > 0 ? reasons.join(", ") : "replaced by a fresh provider thread",
  updatedAt: now
})

const item = (state: ThreadState, runId: RunId, seq: number, content: TurnItemContent, now: string): TurnItem => ({
  id: makeId.turnItem(),
  threadId: state.thread.id,
  runId,
  seq,
  createdAt: now,
  ...content
})

const handoffItem = (
  state: ThreadState,
  runId: RunId,
  seq: number,
  handoff: ContextHandoff,
  delivery: HandoffDelivery,
  now: string
): TurnItemRecorded =>
  new TurnItemRecorded({
    item: item(
      state,
      runId,
      seq,
      { type: "handoff_context", handoffId: handoff.id, delivery, text: handoff.summaryText },
      now
    )
  })

/**
 * The handoffs a run delivers beside its own (a merged fork's work, a subagent's
 * result): one per incoming transfer, each resolved for this run, with its block
 * recorded on the run.
 */
const recordExtras = (
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
 * Start a run: the run, its provider thread, and the transfer + handoff when context
 * must cross. `draft` is the local summariser's handoff for the decision; when a
 * provider is to write the summary (`summaryBy`), the handoff is recorded `pending`
 * and its block is recorded once that summary is in (`planSummary`).
 */
export const planRunStart = (
  state: ThreadState,
  input: {
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
): StartPlan => {
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
  const run: Run = {
    id: runId,
    threadId: state.thread.id,
    ordinal,
    provider: provider.name,
    model: input.model,
    message: input.message,
    status: "running",
    providerThreadId: providerThread.id,
    contextHandoffId: handoff?.id ?? null,
    contextResolution: decision._tag,
    failure: null,
    commandId: input.commandId,
    createdAt: now,
    startedAt: now,
    completedAt: null
  }
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

/** Turn items the provider reported together, numbered after the run's items so far. */
export const planItems = (
  state: ThreadState,
  runId: RunId,
  contents: ReadonlyArray<TurnItemContent>,
  now: string
): Array<TurnItemRecorded> => {
  const existing = itemsOf(state, runId)
  let next = existing.length
  const children = new Map<string, TurnItem>()
  for (const it of existing) if (it.type === "child_agent") children.set(it.childRef, it)
  const out: Array<TurnItemRecorded> = []
  for (const content of contents) {
    // A child agent is one node of the run, updated in place as it reports.
    const earlier = content.type === "child_agent" ? children.get(content.childRef) : undefined
    const recorded: TurnItem =
      earlier !== undefined && content.type === "child_agent"
        ? {
            ...earlier,
            ...content,
            ...(earlier.type === "child_agent" && earlier.childThreadId !== undefined
              ? { childThreadId: earlier.childThreadId }
              : {})
          }
        : item(state, runId, next++, content, now)
    if (recorded.type === "child_agent") children.set(recorded.childRef, recorded)
    out.push(new TurnItemRecorded({ item: recorded }))
  }
  return out
}

/**
 * A child agent the provider ran natively, that has its own native thread and has
 * ended, gets an observe-only app thread (relationship `subagent`): readable, never
 * driven. Its log holds one run mirroring the child: what it was asked, what it
 * answered. Returns the thread's events, and the item now naming that thread.
 */
export const planObservedChild = (
  state: ThreadState,
  run: Run,
  child: TurnItem & { readonly type: "child_agent" },
  now: string
): { readonly threadId: ThreadId; readonly events: ReadonlyArray<ThreadEvent>; readonly item: TurnItem } | null => {
  if (child.nativeThreadRef === null || child.status === "running" || child.childThreadId !== undefined) return null
  const threadId = makeId.thread()
  const thread: AppThread = {
    id: threadId,
    title: child.description.replace(/\s+/g, " ").trim().slice(0, 200),
    workspace: state.thread.workspace,
    lineage: {
      parentThreadId: state.thread.id,
      relationshipToParent: "subagent",
      rootThreadId: state.thread.lineage.rootThreadId,
      observeOnly: true
    },
    createdAt: now,
    updatedAt: now
  }
  const mirrored: Run = {
    id: makeId.run(),
    threadId,
    ordinal: 1,
    provider: run.provider,
    model: run.model,
    message: child.description,
    status: child.status === "completed" ? "completed" : "failed",
    providerThreadId: null,
    contextHandoffId: null,
    contextResolution: null,
    failure:
      child.status === "failed"
        ? { reason: "provider_error", message: child.result ?? "the child agent failed" }
        : null,
    commandId: null,
    createdAt: now,
    startedAt: now,
    completedAt: now
  }
  const at = (seq: number, content: TurnItemContent): TurnItem => ({
    id: makeId.turnItem(),
    threadId,
    runId: mirrored.id,
    seq,
    createdAt: now,
    ...content
  })
  const events: Array<ThreadEvent> = [
    new ThreadCreated({ thread }),
    new RunStarted({ run: { ...mirrored, status: "running", completedAt: null, failure: null } }),
    new TurnItemRecorded({ item: at(0, { type: "user_message", text: child.description }) })
  ]
  if (child.result !== null) {
    events.push(new TurnItemRecorded({ item: at(1, { type: "assistant_message", text: child.result }) }))
  }
  events.push(new RunEnded({ run: mirrored }))
  return { threadId, events, item: { ...child, childThreadId: threadId } }
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

/**
 * What becomes of the transfers a run resolved when it ends. Kept (the provider took
 * the turn): consumed. Not kept: a transfer into this thread from elsewhere (a fork's
 * source, a merge-back, a subagent's result) waits for the next run again; a provider
 * switch's own transfer failed (the next run decides anew).
 */
const settleTransfers = (state: ThreadState, runId: RunId, kept: boolean, now: string): Array<ThreadEvent> => {
  const events: Array<ThreadEvent> = []
  for (const transfer of openTransfers(state)) {
    if (transfer.consumedByRunId !== runId || transfer.status === "consumed" || transfer.status === "superseded") {
      continue
    }
    const next: ContextTransfer = kept
      ? { ...transfer, status: "consumed", consumedAt: now }
      : transfer.type === "provider_handoff"
        ? { ...transfer, status: "failed" }
        : { ...transfer, status: "pending", resolution: null, consumedByRunId: null }
    events.push(new TransferRecorded({ transfer: next }))
  }
  // Handoffs delivered beside the run's own that reached no provider for good.
  if (!kept) {
    const failed = handoffsOfRun(state, runId).filter((h) => h.threadId !== state.thread.id && h.status === "ready")
    needHandoffs(
      state,
      failed.map((h) => h.id),
      true
    )
    for (const head of failed) {
      events.push(
        new HandoffRecorded({ handoff: { ...fullHandoff(state, head.id)!, status: "failed", updatedAt: now } })
      )
    }
  }
  return events
}

const diffOf = (items: ReadonlyArray<TurnItem>): Array<DiffEntry> => {
  const byPath = new Map<string, DiffEntry>()
  for (const it of items) {
    if (it.type === "file_change") {
      const lines = it.summary === "" ? 0 : it.summary.split("\n").length
      byPath.set(it.path, {
        path: it.path,
        change: it.kind,
        additions: it.kind === "delete" ? 0 : lines,
        deletions: it.kind === "delete" ? lines : 0
      })
    }
  }
  return [...byPath.values()]
}

/**
 * End a run. Coverage grows only when the turn reached the provider and was kept
 * (completed or interrupted): a failed turn is treated as unseen, so the next run
 * on that provider thread is told about it through a handoff.
 */
export const planFinish = (
  state: ThreadState,
  input: {
    readonly runId: RunId
    readonly outcome: "completed" | "failed" | "interrupted"
    readonly failure: RunFailure | null
    readonly turnRef: string | null
    /** What the turn cost, when its provider said. */
    readonly usage?: TurnUsage | undefined
    /** Items that arrived with the end of the turn: recorded first, in the same commit. */
    readonly items?: ReadonlyArray<TurnItemContent> | undefined
    /**
     * "pending": the workspace is a git repository, and its checkpoint is taken once the
     * run's end is recorded (see `planCheckpointTaken`); otherwise a logical checkpoint.
     */
    readonly checkpoint?: "pending" | null
    readonly now: string
  }
): ReadonlyArray<ThreadEvent> => {
  const { now } = input
  const run = runById(state, input.runId)
  if (!run || (run.status !== "running" && run.status !== "queued")) return []
  const recorded = planItems(state, run.id, input.items ?? [], now)
  const events: Array<ThreadEvent> = [...recorded]
  const runItems = [...itemsOf(state, run.id), ...recorded.map((e) => e.item)]
  const kept = input.turnRef !== null && input.outcome !== "failed"
  const pt = run.providerThreadId ? providerThreadHead(state, run.providerThreadId) : undefined
  const handoff = run.contextHandoffId ? handoffHeadById(state, run.contextHandoffId) : undefined
  if (pt) {
    if (kept) {
      // One row's worth, however long the provider thread's history.
      events.push(
        new ProviderThreadServed(
          {
            providerThreadId: pt.id,
            runOrdinal: run.ordinal,
            handoffId: handoff?.id ?? null,
            turnRef: input.turnRef,
            status: "idle",
            updatedAt: now
          },
          unchecked
        )
      )
    } else {
      const whole = fullProviderThread(state, pt.id)!
      events.push(
        new ProviderThreadRecorded({
          providerThread: { ...whole, status: whole.nativeRef === null ? "failed" : "idle", updatedAt: now }
        })
      )
    }
  }
  if (handoff && handoff.status === "pending") {
    // Its summary was never finished, so it reached no provider.
    events.push(
      new HandoffRecorded({ handoff: { ...fullHandoff(state, handoff.id)!, status: "failed", updatedAt: now } })
    )
  }
  events.push(...settleTransfers(state, run.id, kept, now))
  const ended: Run = {
    ...run,
    status: input.outcome,
    failure: input.failure,
    completedAt: now,
    ...(input.usage === undefined ? {} : { usage: input.usage })
  }
  events.push(new RunEnded({ run: ended }, unchecked))
  if (input.outcome === "completed") {
    const checkpoint: Checkpoint = {
      id: makeId.checkpoint(),
      threadId: state.thread.id,
      runId: run.id,
      runOrdinal: run.ordinal,
      ...(input.checkpoint === "pending"
        ? { kind: "git" as const, gitRef: null, treeSha: null, diffSummary: [], status: "pending" as const }
        : {
            kind: "logical" as const,
            gitRef: null,
            treeSha: null,
            diffSummary: diffOf(runItems),
            status: "ready" as const
          }),
      createdAt: now
    }
    events.push(new CheckpointRecorded({ checkpoint }, unchecked))
  }
  return events
}

/** How taking a run's git checkpoint went. */
export type CheckpointTaken =
  | {
      readonly _tag: "Taken"
      readonly gitRef: string
      readonly commit: string
      readonly tree: string
      readonly diff: ReadonlyArray<DiffEntry>
      /** Files left out for their size. */
      readonly omitted?: ReadonlyArray<OmittedFile> | undefined
    }
  | { readonly _tag: "Failed"; readonly detail: string }

/**
 * A pending git checkpoint settled: ready with its commit, or, when git failed (or Skein
 * stopped before it was taken), a logical checkpoint of the run's reported file changes
 * with an error item on the run that says why. Anything but a pending checkpoint is
 * left as it is.
 */
export const planCheckpointTaken = (
  state: ThreadState,
  checkpoint: Checkpoint,
  taken: CheckpointTaken,
  now: string
): ReadonlyArray<ThreadEvent> => {
  if (checkpoint.status !== "pending") return []
  if (taken._tag === "Taken") {
    const ready: Checkpoint = {
      ...checkpoint,
      gitRef: taken.gitRef,
      treeSha: taken.tree,
      commitSha: taken.commit,
      diffSummary: [...taken.diff],
      ...(taken.omitted === undefined || taken.omitted.length === 0 ? {} : { omitted: [...taken.omitted] }),
      status: "ready"
    }
    return [new CheckpointRecorded({ checkpoint: ready }, unchecked)]
  }
  const note = planItems(
    state,
    checkpoint.runId,
    [{ type: "error", message: `no git checkpoint: ${taken.detail}`, code: "checkpoint_failed" }],
    now
  )
  const logical: Checkpoint = {
    ...checkpoint,
    kind: "logical",
    gitRef: null,
    treeSha: null,
    diffSummary: diffOf(itemsOf(state, checkpoint.runId)),
    status: "ready"
  }
  return [...note, new CheckpointRecorded({ checkpoint: logical }, unchecked)]
}

/** After a crash or restart: the run that was in flight ends `interrupted`, its provider thread goes idle. */
export const planRecovery = (
  state: ThreadState,
  now: string,
  failure: RunFailure = { reason: "runtime_restart", message: "Skein stopped while this run was in flight" }
): ReadonlyArray<ThreadEvent> => {
  const run = activeRun(state)
  if (run === undefined) return []
  return planFinish(state, {
    runId: run.id,
    outcome: "interrupted",
    failure,
    turnRef: null,
    now
  })
}

/** The decision already recorded for an approval that is no longer open, if any (pure). */
export const approvalAnswer = (
  requests: ReadonlyArray<TurnItem>,
  approvalId: string
): "accept" | "decline" | "cancel" | undefined => {
  let answer: "accept" | "decline" | "cancel" | undefined
  for (const it of requests) {
    if (it.type !== "approval_request" || it.approvalId !== approvalId) continue
    if (it.status === "open") return undefined
    answer = it.status
  }
  return answer
}

/**
 * Approve, decline or cancel an open approval request: the item's new state. `requests`
 * are the thread's approval requests with that id, the newest run's first (see
 * `EventStore.lookup.approvalRequests`).
 */
export const planApproval = (
  requests: ReadonlyArray<TurnItem>,
  approvalId: string,
  decision: "accept" | "decline" | "cancel"
): TurnItem | undefined => {
  for (const it of requests) {
    if (it.type === "approval_request" && it.approvalId === approvalId && it.status === "open") {
      return { ...it, status: decision }
    }
  }
  return undefined
}
