/**
 * Pure text views for the CLI. Here: threads and runs (`show`, `threads`, `send`'s
 * summary, `handoff`, `providers`); the rest by concept, re-exported so that commands
 * import every view from here: coverage (`CoverageText`), items and events
 * (`EventText`), the lineage tree (`TreeText`), rollbacks (`RollbackText`).
 */
import type {
  AppThread,
  ContextHandoff,
  ContextTransfer,
  ProviderInstanceInfo,
  Run,
  RunView,
  ThreadView
} from "@skein/domain"
import { oneLine, paint, plain, type Style } from "./CliStyle.js"
import { contextColumn, coverageLines, handoffLines, labels, range } from "./CoverageText.js"
import { itemLine } from "./EventText.js"

export { contextColumn, coverageLines, handoffLines, labels } from "./CoverageText.js"
export { eventLine, eventText, itemHint, itemLine } from "./EventText.js"
export { restoreLines, rollbackLines } from "./RollbackText.js"
export { type LineageNode, treeLines } from "./TreeText.js"

export const assistantReply = (run: RunView): string =>
  run.items.flatMap((item) => (item.type === "assistant_message" ? [item.text] : [])).join("\n")

export const runLine = (view: ThreadView, run: RunView): string => {
  const names = labels(view)
  const pt =
    run.providerThreadId === null ? "-" : (names.providerThreads.get(run.providerThreadId) ?? run.providerThreadId)
  const failure = run.failure === null ? "" : ` (${run.failure.reason}: ${oneLine(run.failure.message)})`
  const usage = run.usage === undefined ? "" : `  tokens ${run.usage.inputTokens} in, ${run.usage.outputTokens} out`
  return `run ${run.ordinal}  ${run.provider} ${pt}  ${run.status}  ${contextColumn(view, run)}${usage}${failure}`
}

const lineageOf = (t: AppThread): string =>
  t.lineage.parentThreadId === null
    ? "root"
    : `${t.lineage.observeOnly === true ? "observed child agent" : t.lineage.sideChat === true ? "side chat" : (t.lineage.relationshipToParent ?? "child")} of ${t.lineage.parentThreadId} (root ${t.lineage.rootThreadId})`

/** What `skein show` prints: the thread, its conversation run by run, coverage, handoffs, transfers. */
export const showLines = (view: ThreadView, options: { readonly messages?: boolean } = {}): Array<string> => {
  const t = view.thread
  const queued = (view.queued ?? []).map(
    (run) => `run ${run.ordinal}  ${run.provider}  queued (${run.id})  user: ${oneLine(run.message, 200)}`
  )
  const conversation = [...view.runs.flatMap((run) => [runLine(view, run), ...runConversation(run)]), ...queued]
  if (options.messages === true) return conversation
  return [
    `thread ${t.id}  "${t.title}"  ${lineageOf(t)}`,
    `workspace ${t.workspace ?? "none"}`,
    ...conversation,
    "coverage:",
    ...coverageLines(view).map((l) => `  ${l}`),
    ...(view.handoffs.length === 0 ? [] : ["handoffs:", ...handoffLines(view).map((l) => `  ${l}`)]),
    ...(view.transfers.length === 0
      ? []
      : ["transfers:", ...view.transfers.map((x) => `  ${x.id} ${x.type} ${x.status}`)])
  ]
}

/** A run's conversation in brief: the user's message, then each item (the reply in full). */
export const runConversation = (run: RunView, indent = "    "): Array<string> => [
  ...prefixed(`${indent}you: `, run.message),
  ...run.items.flatMap((item) =>
    item.type === "assistant_message"
      ? prefixed(`${indent}${run.provider}: `, item.text)
      : item.type === "reasoning" || item.type === "user_message"
        ? []
        : [`${indent}${itemLine(item)}`]
  )
]

/** `text` under a label, continuation lines aligned with the first. */
const prefixed = (label: string, text: string): Array<string> =>
  text.split(/\r?\n/).map((line, i) => (i === 0 ? label : " ".repeat(label.length)) + line)

const seconds = (ms: number) =>
  ms < 1000 ? `${Math.round(ms)} ms` : ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`

/** How long a run took, from its timestamps. */
export const runDurationMs = (run: Run): number | undefined => {
  if (run.completedAt === null) return undefined
  const from = Date.parse(run.startedAt ?? run.createdAt)
  const to = Date.parse(run.completedAt)
  return Number.isFinite(from) && Number.isFinite(to) ? Math.max(0, to - from) : undefined
}

/**
 * The end of `skein send`: the run's ordinal, id and outcome, its provider thread,
 * how its context was resolved and by which handoff, the tokens it used, how long it took.
 */
export const runSummary = (run: Run, style: Style = plain): string => {
  const ms = runDurationMs(run)
  const outcome = paint(style, run.status === "completed" ? "green" : "red", run.status)
  const context = `context ${run.contextResolution ?? "-"}${run.contextHandoffId === null ? "" : ` via handoff ${run.contextHandoffId}`}`
  const usage =
    run.usage === undefined
      ? "tokens not reported"
      : `tokens ${run.usage.inputTokens} in, ${run.usage.outputTokens} out`
  return [
    `run ${run.ordinal} ${outcome}${ms === undefined ? "" : ` in ${seconds(ms)}`}`,
    run.id,
    `${run.provider}${run.model === null ? "" : ` (${run.model})`} on ${run.providerThreadId ?? "no provider thread"}`,
    context,
    usage
  ].join(" · ")
}

/** `skein threads`: one line per thread, most recently active first. */
export const threadListLines = (threads: ReadonlyArray<AppThread>): Array<string> =>
  [...threads]
    .sort((a, b) => (a.updatedAt > b.updatedAt ? -1 : a.updatedAt < b.updatedAt ? 1 : 0))
    .map(
      (t) =>
        `${t.id}  ${t.updatedAt.slice(0, 19).replace("T", " ")}  "${oneLine(t.title, 60)}"  ${lineageOf(t)}${t.workspace === null ? "" : `  ${t.workspace}`}`
    )

/** `skein handoff`: the record, then its text as the agent read it. */
export const handoffRecordLines = (h: ContextHandoff, carried?: ContextTransfer): Array<string> => [
  `handoff ${h.id}  ${h.kind}  ${h.strategy}  ${h.status}`,
  `thread ${h.threadId}, transfer ${h.transferId}${carried === undefined ? "" : ` (${carried.type} from ${carried.sourceThreadId})`}${h.targetRunId === null ? "" : `, for run ${h.targetRunId}`}`,
  `covers runs ${range(h)}; from ${h.fromProviderThreadIds.join(", ") || "-"} to ${h.toProviderThreadId ?? "-"}`,
  `~${h.tokenEstimate} tokens of a ${h.budgetTokens} budget; written by ${h.createdByProvider ?? "the local summariser"} at ${h.createdAt}`,
  ...h.payload.omitted.map((o) => `omitted ${o.lines} line(s) of ${o.section}: ${o.reason}`),
  "",
  ...h.summaryText.split(/\r?\n/)
]

/** `skein providers`: an instance per line, and why one is unusable. */
export const providerLines = (providers: ReadonlyArray<ProviderInstanceInfo>): Array<string> =>
  providers.flatMap((p) => {
    const c = p.capabilities
    const caps = [
      c.resume ? "resume" : "no resume",
      `fork ${c.fork}`,
      `rollback ${c.rollback}`,
      c.summarise ? "summarises" : "local summaries"
    ].join(", ")
    const binary =
      p.binary === undefined
        ? []
        : [
            `  binary ${p.binary.path ?? "not found"}${p.binary.version === null ? "" : ` ${p.binary.version}`}: ${p.binary.usable ? "usable" : `unusable: ${p.binary.problem ?? "unknown"}`}`
          ]
    return [
      `${p.name}  ${p.driver}  model ${p.model ?? "default"}  ${caps}  ${p.sessions.length} session(s)`,
      ...binary
    ]
  })
