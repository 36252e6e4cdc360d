/**
 * What a thread takes in from other threads, read lazily when a run needs it: the
 * context a fork (or a subagent child) inherited from its source, and the work other
 * threads send into it (a fork merged back, a subagent's result). The shell reads the
 * threads involved from storage; the context core (the resolver) decides what to do
 * with the result.
 *
 * Every transfer lives in its target's log, so the target's actor alone changes it.
 */
import type { ContextTransfer, ThreadId } from "@skein/domain"
import { StorageError } from "@skein/domain"
import { Effect, Option } from "effect"
import type { HandoffMaterial } from "../context/HandoffBuilder.js"
import { collectHandoffMaterial, combineMaterials } from "../context/HandoffBuilder.js"
import type { IncomingTransfer, InheritedContext } from "../context/ContextDecision.js"
import { isLiveRun } from "../context/Coverage.js"
import type { EventStoreShape } from "../store/EventStore.js"
import type { ThreadState } from "../store/ThreadState.js"
import { fullProviderThread, itemsOf, openTransfers, runAt } from "../store/ThreadState.js"

/**
 * Oldest first. Timestamps have millisecond precision and two transfers can share one:
 * those keep the order in which the log recorded them (the sort is stable and the state
 * holds transfers in log order), not the order of their random ids.
 */
const byCreation = (a: ContextTransfer, b: ContextTransfer) =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0

/** The transfer a fork or a subagent child was created with (the newest one, if it was re-opened). */
export const inheritanceOf = (state: ThreadState): ContextTransfer | undefined => {
  let found: ContextTransfer | undefined
  for (const transfer of openTransfers(state)) {
    if (transfer.type !== "fork" && transfer.type !== "subagent_spawn") continue
    if (transfer.targetThreadId !== state.thread.id || transfer.status === "superseded") continue
    if (found === undefined || byCreation(found, transfer) < 0) found = transfer
  }
  return found
}

/** Transfers waiting to be taken in by this thread's next run, oldest first. */
export const pendingIncoming = (state: ThreadState): Array<ContextTransfer> =>
  [...openTransfers(state)]
    .filter(
      (t) =>
        (t.type === "merge_back" || t.type === "subagent_result") &&
        t.targetThreadId === state.thread.id &&
        t.status === "pending"
    )
    .sort(byCreation)

const labelOf = (state: ThreadState): string =>
  state.thread.title.trim() === "" ? `thread ${state.thread.id}` : `thread "${state.thread.title.trim()}"`

interface Lineage {
  readonly parts: ReadonlyArray<{ readonly label: string | null; readonly material: HandoffMaterial }>
  readonly source: ThreadState
}

const loadSource = (store: EventStoreShape, threadId: ThreadId): Effect.Effect<ThreadState, StorageError> =>
  Effect.flatMap(store.loadThread(threadId), (found) =>
    Option.isSome(found)
      ? Effect.succeed(found.value)
      : Effect.fail(
          new StorageError({ detail: `thread ${threadId}, the source of a transfer, is not in the database` })
        )
  )

/**
 * The material of everything `transfer` carries from its source, ancestors first: the
 * source's own inheritance (recursively), then the source's runs up to the source point
 * as they were when the transfer was made (later rollbacks of the source do not change
 * its forks).
 */
const lineageOf = (store: EventStoreShape, transfer: ContextTransfer): Effect.Effect<Lineage, StorageError> =>
  Effect.gen(function* () {
    const source = yield* loadSource(store, transfer.sourceThreadId)
    const upstream = inheritanceOf(source)
    const earlier = upstream === undefined ? [] : (yield* lineageOf(store, upstream)).parts
    const point = transfer.sourcePoint.runOrdinal ?? 0
    const own = yield* store.demand(source, () =>
      collectHandoffMaterial(source, {
        fromOrdinal: 1,
        toOrdinal: point,
        strategy: "full_thread_summary",
        asOf: transfer.createdAt
      })
    )
    return { source, parts: [...earlier, { label: labelOf(source), material: own }] }
  })

/**
 * The inherited context of a fork or a subagent child, or null for a thread that has
 * no source. `cache` keeps what was read from storage for this transfer (its source
 * up to the point does not change).
 */
export const loadInherited = Effect.fnUntraced(function* (
  store: EventStoreShape,
  state: ThreadState,
  cache: Map<string, Omit<InheritedContext, "transfer" | "open">>
): Effect.fn.Return<InheritedContext | null, StorageError> {
  const transfer = inheritanceOf(state)
  if (transfer === undefined) return null
  const key = `${transfer.sourceThreadId}/${transfer.sourcePoint.runId ?? ""}/${transfer.sourcePoint.checkpointId ?? ""}`
  let loaded = cache.get(key)
  if (loaded === undefined) {
    const { parts, source } = yield* lineageOf(store, transfer)
    const fromCheckpoint = transfer.sourcePoint.checkpointId !== undefined
    const point = transfer.sourcePoint.runOrdinal ?? 0
    const run = point > 0 ? yield* store.demand(source, () => runAt(source, point)) : undefined
    const runPt = run?.providerThreadId ?? null
    const pt = runPt !== null ? yield* store.demand(source, () => fullProviderThread(source, runPt)) : undefined
    const turnRef = transfer.sourcePoint.providerTurnRef
    const usable =
      pt !== undefined &&
      pt.nativeRef !== null &&
      pt.nativeRef === transfer.sourcePoint.providerThreadRef &&
      pt.nativeRefStrength === "strong" &&
      pt.status !== "divergent" &&
      pt.status !== "rolled_back" &&
      pt.status !== "failed" &&
      turnRef !== undefined &&
      pt.nativeTurns.some((t) => t.turnRef === turnRef)
    loaded = {
      native:
        usable && run !== undefined
          ? {
              provider: run.provider,
              nativeRef: pt.nativeRef!,
              turnRef: turnRef!,
              isLatestTurn: pt.nativeTurns[pt.nativeTurns.length - 1]?.turnRef === turnRef
            }
          : null,
      material: combineMaterials(parts, {
        strategy: fromCheckpoint ? "checkpoint_summary" : "full_thread_summary",
        from: 1,
        to: point,
        subject: `what this conversation starts from: ${labelOf(source)} up to its run ${point}`
      }),
      kind: fromCheckpoint ? "checkpoint_context" : "portable_context",
      strategy: fromCheckpoint ? "checkpoint_summary" : "full_thread_summary",
      label: labelOf(source)
    }
    cache.set(key, loaded)
  }
  return { ...loaded, transfer, open: transfer.status !== "consumed" }
})

/**
 * The work waiting to come in (merged forks, subagent results), oldest first, each
 * read from its source thread; and the transfers whose source run has since been
 * rolled back (to be superseded, not delivered).
 */
export const loadIncoming = Effect.fnUntraced(function* (
  store: EventStoreShape,
  state: ThreadState
): Effect.fn.Return<
  { readonly incoming: ReadonlyArray<IncomingTransfer>; readonly stale: ReadonlyArray<ContextTransfer> },
  StorageError
> {
  const incoming: Array<IncomingTransfer> = []
  const stale: Array<ContextTransfer> = []
  for (const transfer of pendingIncoming(state)) {
    const source = yield* loadSource(store, transfer.sourceThreadId)
    const to = transfer.sourcePoint.runOrdinal ?? 0
    const pointRun = yield* store.demand(source, () => runAt(source, to))
    if (pointRun === undefined || pointRun.id !== transfer.sourcePoint.runId || !isLiveRun(pointRun)) {
      stale.push(transfer)
      continue
    }
    const from = (transfer.basePoint?.threadId === source.thread.id ? (transfer.basePoint.runOrdinal ?? 0) : 0) + 1
    const label = labelOf(source)
    const material = yield* store.demand(source, () => {
      const collected = collectHandoffMaterial(source, {
        fromOrdinal: from,
        toOrdinal: to,
        strategy: "fork_delta",
        subject:
          transfer.type === "merge_back"
            ? `the work done on a fork of this conversation (${label}, runs ${from}-${to}), merged back`
            : `the result of a subagent (${label}, runs ${from}-${to})`
      })
      return transfer.type === "subagent_result" ? withResult(collected, source, to, label) : collected
    })
    incoming.push({ transfer, material })
  }
  return { incoming, stale }
})

/** A subagent's last answer, first among the subagent results. */
const withResult = (material: HandoffMaterial, child: ThreadState, to: number, label: string): HandoffMaterial => {
  const run = runAt(child, to)
  const items = run ? itemsOf(child, run.id) : []
  let answer = ""
  for (const item of items) if (item.type === "assistant_message") answer = item.text
  const line = `Subagent ${label} (${run?.provider ?? "?"}, ${run?.status ?? "?"}): ${answer.replace(/\s+/g, " ").trim().slice(0, 600) || "(no answer)"}`
  return {
    ...material,
    drafts: material.drafts.map((d) => (d.kind === "subagent_results" ? { ...d, lines: [line, ...d.lines] } : d))
  }
}
