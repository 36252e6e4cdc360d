/**
 * The text of context coverage: short labels for provider threads and handoffs, one
 * line per provider thread (the coverage table in the seeds' shape) and per handoff,
 * and how a run got its context. Pure.
 */
import type { ContextHandoff, ContextTransfer, ProviderThread, Run, ThreadView } from "@skein/domain"

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
export const range = (h: ContextHandoff): string =>
  h.coveredRunOrdinals.from > h.coveredRunOrdinals.to
    ? "inherited"
    : h.coveredRunOrdinals.from === h.coveredRunOrdinals.to
      ? `${h.coveredRunOrdinals.from}`
      : `${h.coveredRunOrdinals.from}-${h.coveredRunOrdinals.to}`

/** Run ordinals as ranges: `[1, 2, 3, 4, 5, 9]` → `1-5,9` (sorted, repeats dropped). */
export const ordinalRanges = (ordinals: ReadonlyArray<number>): string => {
  const sorted = [...new Set(ordinals)].sort((a, b) => a - b)
  const parts: Array<string> = []
  for (let i = 0; i < sorted.length;) {
    let j = i
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`)
    i = j + 1
  }
  return parts.join(",")
}

/** What one provider thread holds, at a glance: its label, the runs it served natively and the handoffs that told it the rest. */
export interface LaneCoverage {
  readonly providerThread: ProviderThread
  readonly label: string
  /** `C1 1-5,9 + H2`: the label, the native runs, then each handoff's label. */
  readonly text: string
}

/** Each provider thread's coverage the seeds' way, in creation order: `C1 1-5,9 + H2`, `L1 6-8 + H1`. */
export const laneCoverage = (view: ThreadView): Array<LaneCoverage> => {
  const names = labels(view)
  return byCreation(view.providerThreads).map((pt) => {
    const label = names.providerThreads.get(pt.id) ?? pt.id
    const native = ordinalRanges(pt.coverage.nativeRunOrdinals)
    // A window of a long thread holds the handoffs of its runs only: the others are counted.
    const handoffs = pt.coverage.handoffIds.flatMap((id) => {
      const name = names.handoffs.get(id)
      return name === undefined ? [] : [`+ ${name}`]
    })
    const elsewhere = pt.coverage.handoffIds.length - handoffs.length
    if (elsewhere > 0) handoffs.unshift(`+ ${elsewhere} earlier`)
    const text = [label, native || "-", ...handoffs].join(" ")
    return { providerThread: pt, label, text }
  })
}

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
