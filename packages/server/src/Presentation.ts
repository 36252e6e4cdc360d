/**
 * Pure text views for the CLI: the coverage table in the seeds' shape, runs, lineage,
 * one line per event. No effects here.
 */
import type { ContextHandoff, ProviderThread, RunView, StoredEvent, ThreadView } from "@skein/domain"

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
    return `${names.handoffs.get(h.id)} ${h.strategy} covers ${range(h)} -> ${target} (${h.kind}, ~${h.tokenEstimate} tokens, ${h.status})`
  })
}

export const assistantReply = (run: RunView): string =>
  run.items.flatMap((item) => (item.type === "assistant_message" ? [item.text] : [])).join("\n")

export const runLine = (view: ThreadView, run: RunView): string => {
  const names = labels(view)
  const pt =
    run.providerThreadId === null ? "-" : (names.providerThreads.get(run.providerThreadId) ?? run.providerThreadId)
  const handoff =
    run.contextHandoffId === null ? "" : ` via ${names.handoffs.get(run.contextHandoffId) ?? run.contextHandoffId}`
  const failure = run.failure === null ? "" : ` (${run.failure.reason}: ${run.failure.message})`
  const usage = run.usage === undefined ? "" : `  tokens ${run.usage.inputTokens} in, ${run.usage.outputTokens} out`
  return `run ${run.ordinal}  ${run.provider} ${pt}  ${run.status}  context ${run.contextResolution ?? "-"}${handoff}${usage}${failure}`
}

export const showLines = (view: ThreadView): Array<string> => {
  const t = view.thread
  const lineage =
    t.lineage.parentThreadId === null
      ? "root"
      : `${t.lineage.relationshipToParent ?? "child"} of ${t.lineage.parentThreadId} (root ${t.lineage.rootThreadId})`
  return [
    `thread ${t.id}  "${t.title}"  ${lineage}`,
    ...view.runs.map((run) => runLine(view, run)),
    "coverage:",
    ...coverageLines(view).map((l) => `  ${l}`),
    ...(view.handoffs.length === 0 ? [] : ["handoffs:", ...handoffLines(view).map((l) => `  ${l}`)]),
    ...(view.transfers.length === 0
      ? []
      : ["transfers:", ...view.transfers.map((x) => `  ${x.id} ${x.type} ${x.status}`)])
  ]
}

export const eventLine = (stored: StoredEvent): string => {
  const e = stored.event
  const detail = (() => {
    switch (e._tag) {
      case "ThreadCreated":
      case "ThreadUpdated":
        return `"${e.thread.title}"`
      case "RunStarted":
      case "RunUpdated":
      case "RunEnded":
        return `run ${e.run.ordinal} ${e.run.provider} ${e.run.status}`
      case "TurnItemRecorded":
        return e.item.type === "assistant_message" || e.item.type === "user_message"
          ? `${e.item.type}: ${e.item.text.slice(0, 120)}`
          : e.item.type
      case "ProviderThreadRecorded":
        return `${e.providerThread.provider} ${e.providerThread.status}`
      case "TransferRecorded":
        return `${e.transfer.type} ${e.transfer.status}`
      case "HandoffRecorded":
        return `${e.handoff.strategy} covers ${range(e.handoff)} ${e.handoff.status}`
      case "CheckpointRecorded":
        return e.checkpoint.id
    }
  })()
  return `#${stored.threadSequence} ${e._tag} ${detail}`
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
