/**
 * Lineage as pure planning: the records that make a fork, a subagent child, a
 * merge-back and a subagent's result. Lineage is cheap and recorded at once; nothing
 * here touches a provider or builds a summary. The context each record stands for is
 * resolved lazily, by the run that needs it (see ContextResolver, LineageContext).
 */
import type {
  AppThread,
  ContextSourcePoint,
  ContextTransfer,
  ProviderName,
  Run,
  ThreadEvent,
  ThreadId
} from "@skein/domain"
import { makeContextTransfer, makeId, ThreadCreated, TransferRecorded } from "@skein/domain"

/** A stable source point: a completed run of the source (and its checkpoint, when it has one). */
export interface SourceRun {
  readonly thread: AppThread
  readonly run: Run
  readonly checkpointId: string | null
  /** The native thread that served the run and the provider's turn, for a native fork there. */
  readonly native: { readonly nativeRef: string; readonly turnRef: string | null } | null
}

export const sourcePointOf = (source: SourceRun, asCheckpoint: boolean): ContextSourcePoint => {
  const turnRef = source.native?.turnRef ?? null
  return {
    threadId: source.thread.id,
    runId: source.run.id,
    runOrdinal: source.run.ordinal,
    ...(asCheckpoint && source.checkpointId !== null ? { checkpointId: source.checkpointId as never } : {}),
    ...(source.native ? { providerThreadRef: source.native.nativeRef } : {}),
    ...(turnRef !== null ? { providerTurnRef: turnRef } : {})
  }
}

/**
 * A new thread made from a source: a fork (optionally a side chat) or a subagent
 * child. Its log begins with the thread and the pending transfer of what it inherits;
 * no provider session, provider thread or summary.
 */
export const planChildThread = (input: {
  readonly kind: "fork" | "subagent"
  readonly parent: AppThread
  /** The source point; null for a child of a thread that has no completed run yet. */
  readonly source: SourceRun | null
  readonly fromCheckpoint: boolean
  readonly title: string
  readonly sideChat: boolean
  readonly createdBy: ContextTransfer["createdBy"]
  readonly now: string
}): { readonly thread: AppThread; readonly transfer: ContextTransfer; readonly events: ReadonlyArray<ThreadEvent> } => {
  const { now, parent } = input
  const id = makeId.thread()
  const thread: AppThread = {
    id,
    title: input.title,
    workspace: parent.workspace,
    lineage: {
      parentThreadId: parent.id,
      relationshipToParent: input.kind,
      rootThreadId: parent.lineage.rootThreadId,
      ...(input.sideChat ? { sideChat: true } : {})
    },
    createdAt: now,
    updatedAt: now
  }
  const transfer = makeContextTransfer({
    type: input.kind === "fork" ? "fork" : "subagent_spawn",
    sourceThreadId: parent.id,
    targetThreadId: id,
    sourcePoint: input.source === null ? { threadId: parent.id } : sourcePointOf(input.source, input.fromCheckpoint),
    sourceProvider: input.source?.run.provider ?? null,
    createdBy: input.createdBy,
    createdAt: now
  })
  return { thread, transfer, events: [new ThreadCreated({ thread }), new TransferRecorded({ transfer })] }
}

/**
 * A fork's work, to be taken in by its source's next run: from the fork's own source
 * point (the base) to the fork's latest stable run.
 */
export const mergeBackTransfer = (input: {
  readonly fork: AppThread
  readonly forkTransfer: ContextTransfer
  readonly latest: Run
  readonly now: string
}): ContextTransfer =>
  makeContextTransfer({
    type: "merge_back",
    sourceThreadId: input.fork.id,
    targetThreadId: input.forkTransfer.sourceThreadId,
    sourcePoint: { threadId: input.fork.id, runId: input.latest.id, runOrdinal: input.latest.ordinal },
    basePoint: input.forkTransfer.sourcePoint,
    sourceProvider: input.latest.provider,
    createdBy: "user",
    createdAt: input.now
  })

/** A subagent child's run ended: its result goes back to the parent's next run. */
export const subagentResultTransfer = (input: {
  readonly parentId: ThreadId
  readonly child: AppThread
  readonly run: Run
  readonly createdBy: ContextTransfer["createdBy"]
  readonly now: string
}): ContextTransfer =>
  makeContextTransfer({
    type: "subagent_result",
    sourceThreadId: input.child.id,
    targetThreadId: input.parentId,
    sourcePoint: { threadId: input.child.id, runId: input.run.id, runOrdinal: input.run.ordinal },
    sourceProvider: input.run.provider as ProviderName,
    createdBy: input.createdBy,
    createdAt: input.now
  })
