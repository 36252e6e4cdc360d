/**
 * The local deterministic summariser: turns a range of the app thread's runs into a
 * structured, budgeted handoff payload and the text block a provider receives.
 *
 * Built from the app thread (runs and turn items), never from a provider transcript.
 * Hidden reasoning never leaves: reasoning items are skipped, and every reasoning text
 * of the covered runs is scrubbed out of whatever is emitted (reasoning reaches the
 * core only as typed `reasoning` items; the runtime knows no provider's syntax).
 *
 * Two steps, so that one decision collects its material once: `collectHandoffMaterial`
 * reads the covered runs (each run's items once, plus a lookup of the latest
 * checkpoint) into plain lines; the resolver sizes that material against the budget,
 * and `assembleHandoff` trims and renders the same material.
 */
import type {
  HandoffOmission,
  HandoffPayload,
  HandoffSection,
  HandoffSectionKind,
  HandoffStrategy
} from "@skein/domain"
import type { ThreadState } from "../store/ThreadState.js"
import { charsForTokens, clampHandoffBudget, estimateTokens } from "./Tokens.js"
import { collectHandoffMaterial, type HandoffMaterial, handoffSectionOrder } from "./HandoffMaterial.js"

export {
  collectHandoffMaterial,
  type HandoffMaterial,
  handoffSectionOrder,
  type MaterialRange
} from "./HandoffMaterial.js"
export { makeScrubber } from "./Scrubber.js"

export interface HandoffRequest {
  readonly fromOrdinal: number
  readonly toOrdinal: number
  readonly strategy: HandoffStrategy
  /** Clamped into 1,024–64,000; default 16,000. */
  readonly budgetTokens?: number
}

export interface BuiltHandoff {
  readonly payload: HandoffPayload
  readonly summaryText: string
  /** `estimateTokens(summaryText)`; never above the budget. */
  readonly tokenEstimate: number
  /** The budget actually applied (after clamping). */
  readonly budgetTokens: number
}

const sectionTitles: Record<HandoffSectionKind, string> = {
  goals: "Goals",
  constraints: "Constraints",
  open_questions: "Open questions and approvals",
  known_failures: "Known failures",
  plan: "Plan (latest)",
  decisions: "Decisions",
  files_changed: "Files changed",
  checkpoint: "Latest checkpoint",
  commands: "Commands and tests (latest run of each)",
  subagent_results: "Subagent results",
  conversation: "Conversation"
}

/** Within a section, which lines go first when over budget: the oldest, or the last listed. */
const dropOldestFirst: Record<HandoffSectionKind, boolean> = {
  goals: true,
  constraints: true,
  open_questions: false,
  known_failures: true,
  plan: false,
  decisions: true,
  files_changed: true,
  checkpoint: false,
  commands: true,
  subagent_results: true,
  conversation: true
}

const headerOf = (c: HandoffMaterial): string => {
  const strategy = c.strategy
  const range = c.from > c.to ? "no runs of its own yet" : c.from === c.to ? `run ${c.from}` : `runs ${c.from}-${c.to}`
  const what =
    c.subject !== undefined
      ? c.subject
      : strategy === "delta_since_target_last_seen"
        ? `what happened in this conversation while you were not taking part (${range})`
        : strategy === "fork_delta"
          ? `the work done on a fork of this conversation (${range})`
          : `this conversation so far (${range})`
  return [
    `# Context handoff (${strategy}): ${range}`,
    `This block summarises ${what}: ${c.liveRuns} run(s), taken from the app thread's own record. ` +
      `The user's new message follows separately and is the actual request.`
  ].join("\n")
}

const blockCost = (title: string): number => 2 + 3 + title.length // "\n\n" + "## " + title
const lineCost = (line: string): number => 3 + line.length // "\n- " + line

/**
 * Sections that may take at most this share of the budget when the whole does not fit
 * (their oldest lines go first), so that a long thread's goals cannot crowd out the plan,
 * the open questions and the failures (nor its decisions the files and commands).
 */
const shareCaps: Partial<Record<HandoffSectionKind, number>> = {
  goals: 0.4,
  constraints: 0.15,
  known_failures: 0.15,
  decisions: 0.15
}

const omissionNote = (budget: number, omitted: ReadonlyArray<HandoffOmission>): string =>
  omitted.length === 0
    ? ""
    : `Omitted to fit the ${budget}-token budget: ` +
      omitted.map((o) => `${o.lines} ${sectionTitles[o.section].toLowerCase()} line(s) (${o.reason})`).join(", ") +
      "."

const render = (header: string, sections: ReadonlyArray<HandoffSection>, note: string): string => {
  const blocks = [header]
  for (const s of sections) blocks.push(`## ${s.title}\n${s.lines.map((l) => `- ${l}`).join("\n")}`)
  if (note.length > 0) blocks.push(note)
  return blocks.join("\n\n")
}

interface Kept {
  pinned: number
  start: number
  end: number
  cost: number
}

/** Trims the material from its least important end to fit the budget, and renders it. */
export const assembleHandoff = (c: HandoffMaterial, budgetTokens?: number): BuiltHandoff => {
  const budget = clampHandoffBudget(budgetTokens)
  const header = headerOf(c)
  const limit = charsForTokens(budget)
  const kept: Array<Kept> = c.drafts.map((d) => ({
    pinned: d.pinned,
    start: d.pinned,
    end: d.lines.length,
    cost: d.lines.length === 0 ? 0 : blockCost(sectionTitles[d.kind]) + d.lines.reduce((n, l) => n + lineCost(l), 0)
  }))
  let total = kept.reduce((n, k) => n + k.cost, header.length)
  const omitted: Array<{ section: HandoffSectionKind; lines: number; reason: string }> = []
  let noteCost = 0
  const over = () => total + noteCost > limit

  const drop = (i: number, reason: string, pinned: boolean) => {
    const d = c.drafts[i]!
    const k = kept[i]!
    const line = pinned ? d.lines[--k.pinned]! : dropOldestFirst[d.kind] ? d.lines[k.start++]! : d.lines[--k.end]!
    k.cost -= lineCost(line)
    if (k.pinned + (k.end - k.start) === 0) k.cost = 0
    total = kept.reduce((n, x) => n + x.cost, header.length)
    let entry = omitted.find((o) => o.section === d.kind && o.reason === reason)
    const before = entry?.lines ?? 0
    if (entry === undefined) {
      entry = { section: d.kind, lines: 0, reason }
      omitted.push(entry)
      omitted.sort((a, b) => handoffSectionOrder.indexOf(a.section) - handoffSectionOrder.indexOf(b.section))
    }
    entry.lines = before + 1
    // The note only grows when an entry appears or a count gains a digit.
    if (before === 0 || String(before).length !== String(before + 1).length) {
      noteCost = 2 + omissionNote(budget, omitted).length
    }
  }

  if (over()) {
    // Capped sections give up their oldest lines beyond their share first.
    c.drafts.forEach((d, i) => {
      const share = shareCaps[d.kind]
      if (share === undefined) return
      const cap = Math.floor(limit * share)
      const k = kept[i]!
      while (k.cost > cap && k.end > k.start) drop(i, `beyond its ${Math.round(share * 100)}% share`, false)
    })
  }
  // Then whole lines, least important section first; pinned lines only as a last resort.
  for (let i = c.drafts.length - 1; i >= 0 && over(); i--) {
    const k = kept[i]!
    while (over() && k.end > k.start) drop(i, "least important first", false)
  }
  for (let i = c.drafts.length - 1; i >= 0 && over(); i--) {
    const k = kept[i]!
    while (over() && k.pinned > 0) drop(i, "least important first", true)
  }

  const sections: Array<HandoffSection> = []
  c.drafts.forEach((d, i) => {
    const k = kept[i]!
    const lines = [...d.lines.slice(0, k.pinned), ...d.lines.slice(k.start, k.end)]
    if (lines.length > 0) sections.push({ kind: d.kind, title: sectionTitles[d.kind], lines })
  })
  const summaryText = render(header, sections, omissionNote(budget, omitted))
  return {
    payload: { sections, omitted: omitted.map((o) => ({ ...o })) },
    summaryText,
    tokenEstimate: estimateTokens(summaryText),
    budgetTokens: budget
  }
}

/**
 * Several materials told as one: section by section, in the order given, each part's
 * lines marked with its label (e.g. the thread a fork inherited from).
 */
export const combineMaterials = (
  parts: ReadonlyArray<{ readonly label: string | null; readonly material: HandoffMaterial }>,
  into: { readonly strategy: HandoffStrategy; readonly from: number; readonly to: number; readonly subject: string }
): HandoffMaterial => ({
  strategy: into.strategy,
  subject: into.subject,
  from: into.from,
  to: into.to,
  liveRuns: parts.reduce((n, p) => n + p.material.liveRuns, 0),
  drafts: handoffSectionOrder.map((kind) => {
    const lines: Array<string> = []
    let pinned = 0
    for (const { label, material } of parts) {
      const draft = material.drafts.find((d) => d.kind === kind)
      if (draft === undefined) continue
      // Only the first part's pinned lines (its overall goal) stay pinned.
      if (lines.length === 0) pinned = draft.pinned
      for (const line of draft.lines) lines.push(label === null ? line : `[${label}] ${line}`)
    }
    return { kind, lines, pinned }
  })
})

/** The size in tokens the material would have with no budget at all (what the staleness policy compares). */
export const handoffMaterialTokens = (c: HandoffMaterial): number => {
  let chars = headerOf(c).length
  for (const d of c.drafts) {
    if (d.lines.length > 0) chars += blockCost(sectionTitles[d.kind]) + d.lines.reduce((n, l) => n + lineCost(l), 0)
  }
  return Math.ceil(chars / 4)
}

/**
 * Builds the handoff for runs `fromOrdinal..toOrdinal` (live runs only) with the given
 * strategy: structured sections, most important first, trimmed from the least important
 * end to fit the budget, every omission recorded.
 */
export const buildHandoffPayload = (state: ThreadState, request: HandoffRequest): BuiltHandoff =>
  assembleHandoff(collectHandoffMaterial(state, request), request.budgetTokens)

/** The unbudgeted size in tokens of the handoff for that range. */
export const estimateHandoffTokens = (
  state: ThreadState,
  range: { readonly fromOrdinal: number; readonly toOrdinal: number; readonly strategy: HandoffStrategy }
): number => handoffMaterialTokens(collectHandoffMaterial(state, range))
