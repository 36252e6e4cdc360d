/**
 * Pure text views for the CLI: the coverage table in the seeds' shape, runs, lineage,
 * one line per event. No effects here.
 */
import type {
  AppThread,
  ContextHandoff,
  ContextTransfer,
  ProviderInstanceInfo,
  ProviderThread,
  RestoreOutcome,
  RollbackView,
  Run,
  RunView,
  StoredEvent,
  ThreadView,
  TurnItem
} from "@skein/domain"
import { oneLine, paint, plain, type Style } from "./CliStyle.js"

const byCreation = <A extends { readonly createdAt: string }>(items: ReadonlyArray<A>): Array<A> =>
  [...items].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0))

/**
 * Short labels for provider threads and handoffs: a provider gets the first letter of
 * its name not already used by another provider (codex → C, claude → L), numbered in
 * creation order (C1, C2 …); handoffs are H1, H2 … in creation order.
 */
export const labels = (
  view: ThreadView
): { readonly providerThreads: Map<string, string>; readonly handoffs: Map<string, string> } => {
  const letters = new Map<string, string>()
  const counts = new Map<string, number>()
  const providerThreads = new Map<string, string>()
  for (const pt of byCreation(view.providerThreads)) {
    let letter = letters.get(pt.provider)
    if (letter === undefined) {
      const taken = new Set(letters.values())
      const candidates = [...pt.provider.toUpperCase().replace(/[^A-Z0-9]/g, ""), ..."PQRSTUVWXYZ"]
      letter = candidates.find((c) => !taken.has(c)) ?? `P${letters.size + 1}`
      letters.set(pt.provider, letter)
    }
    const n = (counts.get(letter) ?? 0) + 1
    counts.set(letter, n)
    providerThreads.set(pt.id, `${letter}${n}`)
  }
  const handoffs = new Map<string, string>()
  byCreation(view.handoffs).forEach((h, i) => handoffs.set(h.id, `H${i + 1}`))
  return { providerThreads, handoffs }
}

/** The runs a handoff covers; one that only carries what a fork inherited covers none of its own. */
const range = (h: ContextHandoff): string =>
  h.coveredRunOrdinals.from > h.coveredRunOrdinals.to
    ? "inherited"
    : h.coveredRunOrdinals.from === h.coveredRunOrdinals.to
      ? `${h.coveredRunOrdinals.from}`
      : `${h.coveredRunOrdinals.from}-${h.coveredRunOrdinals.to}`

/** One line per provider thread: `C1 (codex)  native 1,2,3,4,5,9  handoffs H2(6-8)`. */
export const coverageLines = (view: ThreadView): Array<string> => {
  const names = labels(view)
  const handoffsById = new Map(view.handoffs.map((h) => [h.id as string, h]))
  const rows = byCreation(view.providerThreads).map((pt: ProviderThread) => {
    const handoffs = pt.coverage.handoffIds.map((id) => {
      const h = handoffsById.get(id)
      return h === undefined ? id : `${names.handoffs.get(id)}(${range(h)})`
    })
    return [
      `${names.providerThreads.get(pt.id)} (${pt.provider})`,
      `native ${pt.coverage.nativeRunOrdinals.join(",") || "-"}`,
      `handoffs ${handoffs.join(",") || "-"}`,
      pt.status === "active" || pt.status === "idle" ? "" : `[${pt.status}]`
    ]
  })
  const width = Math.max(0, ...rows.map((r) => r[0]!.length))
  return rows.map((r) => `${r[0]!.padEnd(width)} ${[r[1]!, r[2]!, r[3]!].join("  ")}`.trimEnd())
}

/** One line per handoff: label, strategy, covered runs, target, kind, size. */
export const handoffLines = (view: ThreadView): Array<string> => {
  const names = labels(view)
  return byCreation(view.handoffs).map((h) => {
    const target =
      h.toProviderThreadId === null ? "?" : (names.providerThreads.get(h.toProviderThreadId) ?? h.toProviderThreadId)
    return `${names.handoffs.get(h.id)} ${handoffPurpose(view, h)} covers ${range(h)} -> ${target} (${h.kind}, ~${h.tokenEstimate} tokens, ${h.status})`
  })
}

/**
 * What a handoff is for: its strategy for a handoff between providers (a delta since
 * the target last saw the thread, a full summary), else the kind of transfer it carries
 * (a fork's inheritance, a merge-back, a subagent's task or result).
 */
const handoffPurpose = (view: ThreadView, h: ContextHandoff): string => {
  const transfer = view.transfers.find((x) => x.id === h.transferId)
  return transfer === undefined || transfer.type === "provider_handoff" ? h.strategy : transfer.type
}

/**
 * How a run got its context, true for every transfer kind: its resolution, then each
 * transfer it took in (a handoff between providers, a merge-back, a subagent's result, a
 * fork's inheritance) with the handoff that carried it: `delta via H2 provider_handoff, H3 merge_back`.
 */
export const contextColumn = (view: ThreadView, run: Run): string => {
  const names = labels(view)
  const label = (id: string) => names.handoffs.get(id) ?? id
  const taken = view.transfers.filter((x) => x.consumedByRunId === run.id)
  const parts = taken.map((x: ContextTransfer) => {
    const handoff = x.resolution !== null && "contextHandoffId" in x.resolution ? x.resolution.contextHandoffId : null
    const own = handoff ?? view.handoffs.find((h) => h.transferId === x.id && h.targetRunId === run.id)?.id ?? null
    return own === null ? `${x.type} native` : `${label(own)} ${x.type}`
  })
  const carried = new Set(
    taken.flatMap((x) => view.handoffs.filter((h) => h.transferId === x.id).map((h) => h.id as string))
  )
  if (run.contextHandoffId !== null && !carried.has(run.contextHandoffId)) parts.unshift(label(run.contextHandoffId))
  return `context ${run.contextResolution ?? "-"}${parts.length === 0 ? "" : ` via ${parts.join(", ")}`}`
}

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
  const conversation = view.runs.flatMap((run) => [runLine(view, run), ...runConversation(run)])
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

const spawned = (
  output: string | null
): { readonly threadId?: string; readonly runId?: string; readonly error?: string } => {
  try {
    return output === null ? {} : (JSON.parse(output) as { threadId?: string; runId?: string; error?: string })
  } catch {
    return {}
  }
}

const planText = (steps: ReadonlyArray<{ readonly text: string; readonly status: string }>) =>
  steps
    .map((s) => `[${s.status === "completed" ? "x" : s.status === "in_progress" ? ">" : " "}] ${oneLine(s.text, 80)}`)
    .join("  ")

/**
 * One item in one line: a command with its exit code, a file change with its path, a
 * plan with its steps, an approval with its id and state, a subagent with its thread,
 * an error (a refusal) with its text.
 */
export const itemLine = (item: TurnItem, style: Style = plain): string => {
  switch (item.type) {
    case "user_message":
      return `you: ${oneLine(item.text)}`
    case "assistant_message":
      return `reply: ${oneLine(item.text)}`
    case "reasoning":
      return "reasoning (hidden)"
    case "command_execution":
      return `$ ${oneLine(item.command, 120)}  ${item.exitCode === null ? "(running)" : paint(style, item.exitCode === 0 ? "green" : "red", `exit ${item.exitCode}`)}`
    case "file_change":
      return `${item.kind === "add" ? "added" : item.kind === "delete" ? "deleted" : "modified"} ${item.path}${item.summary === "" ? "" : `: ${oneLine(item.summary, 120)}`}`
    case "plan":
      return `plan ${planText(item.steps)}`
    case "approval_request":
      return item.status === "open"
        ? paint(style, "yellow", `approval ${item.approvalId} open: ${oneLine(item.question)}`)
        : `approval ${item.approvalId} answered ${item.status}: ${oneLine(item.question)}`
    case "error":
      return paint(
        style,
        "red",
        `${item.code === "write_rejected" ? "refused" : "error"}${item.code === null ? "" : ` [${item.code}]`}: ${oneLine(item.message)}`
      )
    case "handoff_context":
      return `context: handoff ${item.handoffId} delivered (${item.delivery}, ${item.text.length} characters)`
    case "child_agent":
      return `child agent ${item.status}: ${oneLine(item.description, 100)}${item.childThreadId === undefined ? "" : ` (thread ${item.childThreadId})`}${item.result === null ? "" : ` -> ${oneLine(item.result, 100)}`}`
    case "tool_call": {
      if (item.name === "spawn_subagent") {
        const out = spawned(item.output)
        const input = spawned(item.input) as { readonly provider?: string; readonly prompt?: string }
        const asked = `${input.provider ?? "?"}: ${oneLine(input.prompt ?? "", 80)}`
        return out.threadId !== undefined
          ? `subagent ${out.threadId} started on ${asked}`
          : paint(style, "red", `subagent refused (${asked}): ${oneLine(out.error ?? item.output ?? "no answer")}`)
      }
      return `tool ${item.name}(${oneLine(item.input, 80)})${item.output === null ? "" : ` -> ${oneLine(item.output, 80)}`}`
    }
  }
}

/** What a person does about an item, if anything (an open approval: the command that answers it). */
export const itemHint = (item: TurnItem): string | undefined =>
  item.type === "approval_request" && item.status === "open"
    ? `  answer it: skein approve ${item.threadId} ${item.approvalId} accept|decline|cancel`
    : item.type === "tool_call" && item.name === "spawn_subagent" && spawned(item.output).threadId !== undefined
      ? `  follow it: skein follow ${spawned(item.output).threadId}`
      : undefined

const runEvent = (verb: string, run: Run): string =>
  `run ${run.ordinal} ${verb} on ${run.provider} (${run.id})${run.contextResolution === null ? "" : `, context ${run.contextResolution}`}${run.failure === null ? "" : `: ${run.failure.reason}: ${oneLine(run.failure.message)}`}`

/** What an event says, in one line. */
export const eventText = (stored: StoredEvent): string => {
  const e = stored.event
  switch (e._tag) {
    case "ThreadCreated":
      return `thread created "${oneLine(e.thread.title, 80)}"${e.thread.workspace === null ? "" : ` in ${e.thread.workspace}`}${e.thread.lineage.parentThreadId === null ? "" : ` (${e.thread.lineage.relationshipToParent} of ${e.thread.lineage.parentThreadId})`}`
    case "ThreadUpdated":
      return `thread updated "${oneLine(e.thread.title, 80)}"`
    case "RunStarted":
      return runEvent(e.run.status === "queued" ? "queued" : "started", e.run)
    case "RunUpdated":
      return runEvent(e.run.status, e.run)
    case "RunEnded":
      return runEvent(e.run.status, e.run)
    case "TurnItemRecorded":
      return `item ${e.item.seq} of ${e.item.runId}: ${itemLine(e.item)}`
    case "ProviderThreadRecorded": {
      const pt = e.providerThread
      return `provider thread ${pt.id} (${pt.provider}) ${pt.status}${pt.nativeRef === null ? "" : `, native ${pt.nativeRef}`}`
    }
    case "ProviderThreadServed":
      return `provider thread ${e.providerThreadId} served run ${e.runOrdinal}${e.handoffId === null ? "" : ` with handoff ${e.handoffId}`}, now ${e.status}`
    case "TransferRecorded": {
      const x = e.transfer
      const run = x.sourcePoint.runOrdinal === undefined ? "" : ` at run ${x.sourcePoint.runOrdinal}`
      return `transfer ${x.id} ${x.type} ${x.status}: ${x.sourceThreadId}${run} -> ${x.targetThreadId}${x.targetProvider === null ? "" : ` (${x.targetProvider})`}`
    }
    case "HandoffRecorded":
      return `handoff ${e.handoff.id} ${e.handoff.kind} covers ${range(e.handoff)}, ~${e.handoff.tokenEstimate} tokens, ${e.handoff.status}`
    case "CheckpointRecorded": {
      const c = e.checkpoint
      const files = c.diffSummary.length === 0 ? "" : `, ${c.diffSummary.length} file(s) changed`
      return `checkpoint ${c.id} of run ${c.runOrdinal} ${c.status} (${c.kind}${c.treeSha === null ? "" : ` ${c.treeSha.slice(0, 10)}`}${files})`
    }
  }
}

/** The time of day of an ISO timestamp (UTC, to the millisecond). */
const timeOf = (iso: string): string => (iso.length >= 23 ? iso.slice(11, 23) : iso)

/** One line per event: `#7 12:04:05.120 run 2 completed on beta (run_…)`. */
export const eventLine = (stored: StoredEvent): string =>
  `#${stored.threadSequence} ${timeOf(stored.createdAt)} ${eventText(stored)}`

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

const fileList = (files: ReadonlyArray<string>): string => (files.length === 0 ? "none" : files.join(", "))
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

/**
 * What a file restore did (or, for a dry run, would do): files reverted, deleted and
 * created, files it could not restore, the backup of the work tree and how to undo.
 */
export const restoreLines = (r: RestoreOutcome): Array<string> => {
  const commit = r.checkpointCommit.slice(0, 12)
  const notRestored = [
    ...(r.omitted.length === 0
      ? []
      : [
          `not restored (over the checkpoint's size limit): ${r.omitted.map((o) => `${o.path} (${mib(o.bytes)})`).join(", ")}`
        ]),
    ...(r.submodules.length === 0 ? [] : [`not restored (inside submodules): ${r.submodules.join(", ")}`])
  ]
  if (r.dryRun) {
    return [
      `dry run: restoring ${r.workspace} to run ${r.toRunOrdinal} (checkpoint ${commit}) would`,
      `  revert ${r.reverted.length}: ${fileList(r.reverted)}`,
      `  delete ${r.deleted.length}: ${fileList(r.deleted)}`,
      `  create ${r.created.length}: ${fileList(r.created)}`,
      ...notRestored.map((l) => `  ${l}`),
      "nothing was changed"
    ]
  }
  return [
    `restored ${r.workspace} to run ${r.toRunOrdinal} (checkpoint ${commit})`,
    `  reverted ${r.reverted.length}: ${fileList(r.reverted)}`,
    `  deleted ${r.deleted.length}: ${fileList(r.deleted)}`,
    `  created ${r.created.length}: ${fileList(r.created)}`,
    ...notRestored.map((l) => `  ${l}`),
    ...(r.backupRef === null
      ? []
      : [
          `  the work tree before the restore is saved as ${r.backupRef}${r.backupCommit === null ? "" : ` (${r.backupCommit.slice(0, 12)})`}`
        ]),
    ...(r.undo === null ? [] : [`  to undo: ${r.undo}`])
  ]
}

/** A thread with the threads made from it, for `skein tree`. */
export interface LineageNode {
  readonly view: ThreadView
  readonly children: ReadonlyArray<LineageNode>
}

/**
 * The lineage tree: each thread with how it came to be (fork, side chat, subagent,
 * observe-only), its runs, the coverage of its provider threads, and the transfers
 * still waiting to be taken in.
 */
export const treeLines = (root: LineageNode): Array<string> => {
  const out: Array<string> = []
  const visit = (node: LineageNode, indent: string, branch: string, childIndent: string) => {
    const { thread, transfers, runs } = node.view
    const inherited = transfers.find(
      (x) =>
        (x.type === "fork" || x.type === "subagent_spawn") &&
        x.targetThreadId === thread.id &&
        x.status !== "superseded"
    )
    const kind = thread.lineage.observeOnly
      ? "observed child agent"
      : thread.lineage.relationshipToParent === "subagent"
        ? "subagent"
        : thread.lineage.relationshipToParent === "fork"
          ? thread.lineage.sideChat
            ? "side chat"
            : "fork"
          : "thread"
    const from = inherited?.sourcePoint.runOrdinal === undefined ? "" : ` from run ${inherited.sourcePoint.runOrdinal}`
    const live = runs.filter((r) => r.status !== "rolled_back").length
    const rolled = runs.length - live
    out.push(
      `${indent}${branch}${kind} ${thread.id} "${thread.title}"${from}  ${live} run(s)${rolled > 0 ? `, ${rolled} rolled back` : ""}${inherited ? `  [inherited: ${inherited.status}]` : ""}`
    )
    const detail = `${indent}${childIndent}${node.children.length > 0 ? "│ " : "  "} `
    for (const line of coverageLines(node.view)) out.push(`${detail}${line}`)
    const pending = transfers.filter(
      (x) =>
        x.status === "pending" && x.targetThreadId === thread.id && x.type !== "fork" && x.type !== "subagent_spawn"
    )
    for (const x of pending) out.push(`${detail}pending ${x.type} from ${x.sourceThreadId}`)
    node.children.forEach((child, i) => {
      const last = i === node.children.length - 1
      visit(child, `${indent}${childIndent}`, last ? "└─ " : "├─ ", last ? "   " : "│  ")
    })
  }
  visit(root, "", "", "")
  return out
}

const ordinals = (runs: ReadonlyArray<Run>): string =>
  runs.length === 0
    ? "none"
    : runs.length === 1
      ? `run ${runs[0]!.ordinal}`
      : `runs ${runs[0]!.ordinal}-${runs[runs.length - 1]!.ordinal}`

/** What `skein rollback` prints: which runs left the conversation (or would), then the file restore, if any. */
export const rollbackLines = (view: RollbackView, toRunOrdinal: number): Array<string> => {
  const id = view.thread.id
  const dryRun = view.restore?.dryRun === true
  const later = view.runs.filter((r) => r.ordinal > toRunOrdinal)
  const head = dryRun
    ? `dry run: rolling thread ${id} back to run ${toRunOrdinal} would roll back ${ordinals(later.filter((r) => r.status !== "rolled_back"))}`
    : `thread ${id} rolled back to run ${toRunOrdinal}: ${ordinals(later.filter((r) => r.status === "rolled_back"))} rolled back`
  return [head, ...(view.restore === undefined ? [] : restoreLines(view.restore))]
}
