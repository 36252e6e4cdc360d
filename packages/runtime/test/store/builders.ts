/**
 * Builders for valid domain entities and events, and a fast-check generator of valid
 * per-thread event logs, for the store tests.
 */
import {
  AppThread,
  ApprovalId,
  Checkpoint,
  CheckpointId,
  CheckpointRecorded,
  ContextHandoff,
  ContextHandoffId,
  ContextTransfer,
  ContextTransferId,
  HandoffRecorded,
  ProviderName,
  ProviderThread,
  ProviderThreadId,
  ProviderThreadRecorded,
  Run,
  RunEnded,
  RunId,
  RunStarted,
  RunUpdated,
  ThreadCreated,
  ThreadId,
  ThreadUpdated,
  TransferRecorded,
  TurnItem,
  TurnItemId,
  TurnItemRecorded,
  ProviderThreadServed,
  type RunStatus,
  type ThreadEvent,
  type TurnItemContent
} from "@skein/domain"
import fc from "fast-check"
import { servedBy } from "../../src/store/Projection.js"

export const at = (n: number): string => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString()

export const threadId = (name: string) => ThreadId.make(`thr_${name}`)

export const makeThread = (id: ThreadId, overrides: Partial<AppThread> = {}): AppThread => ({
  id,
  title: `thread ${id}`,
  workspace: null,
  lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: id },
  createdAt: at(0),
  updatedAt: at(0),
  ...overrides
})

export const makeRun = (thread: ThreadId, ordinal: number, overrides: Partial<Run> = {}): Run => ({
  id: RunId.make(`run_${thread}_${ordinal}`),
  threadId: thread,
  ordinal,
  provider: ProviderName.make("alpha"),
  model: null,
  message: `message ${ordinal}`,
  status: "running",
  providerThreadId: null,
  contextHandoffId: null,
  contextResolution: null,
  failure: null,
  commandId: null,
  createdAt: at(ordinal),
  startedAt: at(ordinal),
  completedAt: null,
  ...overrides
})

export const makeItem = (run: Run, seq: number, content: TurnItemContent, id?: string): TurnItem =>
  ({
    id: TurnItemId.make(id ?? `itm_${run.id}_${seq}`),
    threadId: run.threadId,
    runId: run.id,
    seq,
    createdAt: at(run.ordinal * 100 + seq),
    ...content
  }) as TurnItem

/** One of each turn item content variant. */
export const itemContents = (n: number): ReadonlyArray<TurnItemContent> => [
  { type: "user_message", text: `hello ${n}` },
  { type: "assistant_message", text: `ok ${n}` },
  { type: "reasoning", text: "thinking" },
  { type: "tool_call", name: "grep", input: '{"q":1}', output: null },
  { type: "command_execution", command: "npm test", exitCode: 1, output: "1 failed" },
  { type: "file_change", path: "src/a.ts", kind: "modify", summary: "+1 -1" },
  {
    type: "plan",
    steps: [
      { text: "a", status: "completed" },
      { text: "b", status: "pending" }
    ]
  },
  { type: "approval_request", approvalId: ApprovalId.make(`apr_${n}`), question: "may I?", status: "open" },
  { type: "error", message: "boom", code: null },
  { type: "handoff_context", handoffId: ContextHandoffId.make(`hof_${n}`), delivery: "developer", text: "context" }
]

export const makeProviderThread = (
  thread: ThreadId,
  name: string,
  overrides: Partial<ProviderThread> = {}
): ProviderThread => ({
  id: ProviderThreadId.make(`pth_${thread}_${name}`),
  threadId: thread,
  provider: ProviderName.make("alpha"),
  driver: "scripted",
  nativeRef: `native-${name}`,
  nativeRefStrength: "strong",
  firstRunOrdinal: 1,
  lastRunOrdinal: 1,
  handoffIds: [],
  coverage: { nativeRunOrdinals: [1], handoffIds: [] },
  nativeTurns: [{ runOrdinal: 1, turnRef: "turn-1" }],
  settings: { model: null, runtimeMode: "default" },
  status: "active",
  statusReason: null,
  createdAt: at(1),
  updatedAt: at(1),
  ...overrides
})

export const makeTransfer = (
  source: ThreadId,
  target: ThreadId,
  name: string,
  overrides: Partial<ContextTransfer> = {}
): ContextTransfer => ({
  id: ContextTransferId.make(`xfr_${name}`),
  type: "fork",
  sourceThreadId: source,
  targetThreadId: target,
  sourcePoint: { threadId: source, runOrdinal: 1 },
  basePoint: null,
  sourceProvider: ProviderName.make("alpha"),
  targetProvider: null,
  status: "pending",
  resolution: null,
  reasons: [],
  createdBy: "user",
  createdAt: at(2),
  consumedAt: null,
  consumedByRunId: null,
  ...overrides
})

export const makeHandoff = (
  thread: ThreadId,
  transferId: ContextTransferId,
  name: string,
  overrides: Partial<ContextHandoff> = {}
): ContextHandoff => ({
  id: ContextHandoffId.make(`hof_${name}`),
  transferId,
  threadId: thread,
  targetRunId: null,
  kind: "portable_context",
  strategy: "full_thread_summary",
  fromProviderThreadIds: [],
  toProviderThreadId: null,
  coveredRunOrdinals: { from: 1, to: 1 },
  payload: {
    sections: [{ kind: "goals", title: "Goals", lines: ["ship it"] }],
    omitted: [{ section: "conversation", lines: 3, reason: "budget" }]
  },
  summaryText: "summary",
  tokenEstimate: 10,
  budgetTokens: 16000,
  status: "ready",
  supersededBy: null,
  createdByProvider: null,
  createdAt: at(3),
  updatedAt: at(3),
  ...overrides
})

export const makeCheckpoint = (run: Run, overrides: Partial<Checkpoint> = {}): Checkpoint => ({
  id: CheckpointId.make(`chk_${run.id}`),
  threadId: run.threadId,
  runId: run.id,
  runOrdinal: run.ordinal,
  kind: "git",
  gitRef: `refs/skein/${run.id}`,
  treeSha: "a".repeat(40),
  diffSummary: [{ path: "src/a.ts", change: "modify", additions: 1, deletions: 1 }],
  status: "ready",
  createdAt: at(4),
  ...overrides
})

/** A small complete log: thread, a finished run with items, provider thread, transfer, handoff, checkpoint. */
export const sampleLog = (id: ThreadId, source?: ThreadId): Array<ThreadEvent> => {
  const run = makeRun(id, 1)
  const transfer = makeTransfer(source ?? id, id, `${id}_in`)
  return [
    new ThreadCreated({ thread: makeThread(id) }),
    new RunStarted({ run }),
    ...itemContents(1).map((content, seq) => new TurnItemRecorded({ item: makeItem(run, seq, content) })),
    new ProviderThreadRecorded({ providerThread: makeProviderThread(id, "a") }),
    new TransferRecorded({ transfer }),
    new HandoffRecorded({ handoff: makeHandoff(id, transfer.id, `${id}_h`) }),
    new RunEnded({ run: { ...run, status: "completed", completedAt: at(9) } }),
    new CheckpointRecorded({ checkpoint: makeCheckpoint(run) })
  ]
}

// --- a generator of valid logs ---------------------------------------------------------

export const opKinds = [
  "startRun",
  "updateRun",
  "endRun",
  "item",
  "updateItem",
  "providerThread",
  "served",
  "transfer",
  "handoff",
  "checkpoint",
  "threadUpdated"
] as const

export interface Op {
  readonly kind: (typeof opKinds)[number]
  readonly pick: number
  readonly text: string
}

export const opArbitrary: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom(...opKinds),
  pick: fc.nat({ max: 1000 }),
  text: fc.string({ maxLength: 12 })
})

const endStatuses: ReadonlyArray<RunStatus> = ["completed", "failed", "interrupted", "rolled_back"]

/**
 * Interprets ops into a valid log for `id`: ordinals from 1, item seqs unique per run,
 * updates only of entities that exist, every id unique. `peers` are other threads a
 * transfer may come from.
 */
export const buildLog = (
  id: ThreadId,
  ops: ReadonlyArray<Op>,
  peers: ReadonlyArray<ThreadId> = []
): Array<ThreadEvent> => {
  let thread = makeThread(id)
  const events: Array<ThreadEvent> = [new ThreadCreated({ thread })]
  const runs: Array<Run> = []
  const items: Array<TurnItem> = []
  const seqs = new Map<string, number>()
  const providerThreads: Array<ProviderThread> = []
  const transfers: Array<ContextTransfer> = []
  const handoffs: Array<ContextHandoff> = []
  let n = 0
  const pick = <A>(list: ReadonlyArray<A>, i: number): A | undefined => list[i % Math.max(list.length, 1)]
  for (const op of ops) {
    n++
    switch (op.kind) {
      case "startRun": {
        const run = makeRun(id, runs.length + 1, { message: op.text })
        runs.push(run)
        events.push(new RunStarted({ run }))
        break
      }
      case "updateRun":
      case "endRun": {
        const run = pick(runs, op.pick)
        if (run === undefined) break
        const next: Run =
          op.kind === "endRun"
            ? { ...run, status: endStatuses[op.pick % endStatuses.length]!, completedAt: at(n) }
            : { ...run, providerThreadId: ProviderThreadId.make(`pth_${n}`), contextResolution: "delta" }
        runs[next.ordinal - 1] = next
        events.push(op.kind === "endRun" ? new RunEnded({ run: next }) : new RunUpdated({ run: next }))
        break
      }
      case "item": {
        const run = pick(runs, op.pick)
        if (run === undefined) break
        const seq = seqs.get(run.id) ?? 0
        seqs.set(run.id, seq + 1)
        const content = itemContents(n)[op.pick % 10]!
        const item = makeItem(run, seq, content, `itm_${id}_${n}`)
        items.push(item)
        events.push(new TurnItemRecorded({ item }))
        break
      }
      case "updateItem": {
        const item = pick(items, op.pick)
        if (item === undefined) break
        const next = { ...item, createdAt: at(n) } as TurnItem
        items[items.indexOf(item)] = next
        events.push(new TurnItemRecorded({ item: next }))
        break
      }
      case "providerThread": {
        const existing = op.pick % 2 === 0 ? pick(providerThreads, op.pick) : undefined
        const next =
          existing !== undefined
            ? { ...existing, status: "idle" as const, statusReason: op.text, updatedAt: at(n) }
            : makeProviderThread(id, String(n))
        if (existing !== undefined) providerThreads[providerThreads.indexOf(existing)] = next
        else providerThreads.push(next)
        events.push(new ProviderThreadRecorded({ providerThread: next }))
        break
      }
      case "served": {
        // A provider thread serves the next run (ordinals only grow), as run ends do.
        const pt = pick(providerThreads, op.pick)
        if (pt === undefined) break
        const served = {
          runOrdinal: Math.max(pt.lastRunOrdinal ?? 0, runs.length) + 1,
          handoffId: op.pick % 3 === 0 ? ContextHandoffId.make(`hof_served_${n}`) : null,
          turnRef: op.pick % 2 === 0 ? `turn_${n}` : null,
          status: "idle" as const,
          updatedAt: at(n)
        }
        providerThreads[providerThreads.indexOf(pt)] = servedBy(pt, served)
        events.push(new ProviderThreadServed({ providerThreadId: pt.id, ...served }))
        break
      }
      case "transfer": {
        const existing = op.pick % 2 === 0 ? pick(transfers, op.pick) : undefined
        const source = pick(peers, op.pick) ?? id
        const next =
          existing !== undefined
            ? { ...existing, status: "consumed" as const, consumedAt: at(n) }
            : makeTransfer(source, id, `${id}_${n}`, { createdAt: at(n) })
        if (existing !== undefined) transfers[transfers.indexOf(existing)] = next
        else transfers.push(next)
        events.push(new TransferRecorded({ transfer: next }))
        break
      }
      case "handoff": {
        const existing = op.pick % 2 === 0 ? pick(handoffs, op.pick) : undefined
        const next =
          existing !== undefined
            ? { ...existing, status: "superseded" as const, updatedAt: at(n) }
            : makeHandoff(id, ContextTransferId.make(`xfr_${n}`), `${id}_${n}`, { summaryText: op.text })
        if (existing !== undefined) handoffs[handoffs.indexOf(existing)] = next
        else handoffs.push(next)
        events.push(new HandoffRecorded({ handoff: next }))
        break
      }
      case "checkpoint": {
        const run = pick(runs, op.pick)
        if (run === undefined) break
        events.push(
          new CheckpointRecorded({
            checkpoint: makeCheckpoint(run, { status: op.pick % 3 === 0 ? "pending" : "ready" })
          })
        )
        break
      }
      case "threadUpdated": {
        thread = { ...thread, title: op.text, updatedAt: at(n) }
        events.push(new ThreadUpdated({ thread }))
        break
      }
    }
  }
  return events
}

/** Splits a log into append batches of 1..maxBatch events, sizes taken from `sizes` cyclically. */
export const batches = <A>(log: ReadonlyArray<A>, sizes: ReadonlyArray<number>): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  let i = 0
  let k = 0
  while (i < log.length) {
    const size = Math.max(1, sizes.length === 0 ? log.length : sizes[k++ % sizes.length]!)
    out.push(log.slice(i, i + size))
    i += size
  }
  return out
}
