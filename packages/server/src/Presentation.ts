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

const range = (h: ContextHandoff): string =>
  h.coveredRunOrdinals.from === h.coveredRunOrdinals.to
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
  return `run ${run.ordinal}  ${run.provider} ${pt}  ${run.status}  context ${run.contextResolution ?? "-"}${handoff}${failure}`
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
