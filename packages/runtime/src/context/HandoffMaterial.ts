/**
 * A handoff's material: the covered runs of the app thread read once into plain lines,
 * section by section (goals, constraints, plan, decisions, files, commands, ...), every
 * text scrubbed of the runs' hidden reasoning (Scrubber.ts). `HandoffBuilder` sizes and renders it.
 */
import type { Checkpoint, ContextHandoffId, HandoffSectionKind, HandoffStrategy, Run, TurnItem } from "@skein/domain"
import { HandoffSectionKind as HandoffSectionKindSchema } from "@skein/domain"
import type { ThreadState } from "../store/ThreadState.js"
import { fullHandoff, isLiveOrdinal, itemsOf, needHandoffs, needRuns, runAt } from "../store/ThreadState.js"
import { latestReadyCheckpoint } from "./CheckpointLookup.js"
import { isLiveRun as isLive } from "./Coverage.js"
import { makeScrubber, oneLine, type Scrub } from "./Scrubber.js"

/** Section order = importance (the domain lists the kinds in that order): the budget drops from the end first. */
export const handoffSectionOrder: ReadonlyArray<HandoffSectionKind> = HandoffSectionKindSchema.literals

const LINE_CAP = 400
/** What a later summary keeps of work brought in from another thread. */
const broughtKinds: ReadonlyArray<HandoffSectionKind> = [
  "subagent_results",
  "decisions",
  "files_changed",
  "conversation"
]
const SHORT_USER = 160
const SHORT_REPLY = 240
const MAX_DIFF_ENTRIES = 200

const CONSTRAINT = /\b(must|never|don't|do not|always|only|should not|shouldn't|avoid|without)\b/i
const DECISION = /^\s*(?:[-*]\s*)?decision:\s*(.+?)\s*$/gim

const clip = (text: string, cap: number): string => (text.length <= cap ? text : `${text.slice(0, cap - 1)}…`)

interface Draft {
  readonly kind: HandoffSectionKind
  readonly lines: ReadonlyArray<string>
  /** Leading lines dropped only as a last resort (the overall goal). */
  readonly pinned: number
}

/** What a handoff of a range says before budgeting: plain lines per section. */
export interface HandoffMaterial {
  readonly strategy: HandoffStrategy
  /** What the block summarises, when not this conversation's own runs (e.g. a fork's work). */
  readonly subject?: string | undefined
  readonly from: number
  readonly to: number
  readonly liveRuns: number
  readonly drafts: ReadonlyArray<Draft>
}

/** What the user said in the run: its message, then whatever was steered into its turn. */
const userTextOf = (run: Run, items: ReadonlyArray<TurnItem>): string => {
  const said = items.flatMap((item) => (item.type === "user_message" ? [item.text] : []))
  return said.length === 0 ? run.message : said.join("\n")
}

const lastLine = (text: string): string => {
  const trimmed = text.trimEnd()
  return trimmed.slice(trimmed.lastIndexOf("\n") + 1).trim()
}

const planMark = { pending: "[ ]", in_progress: "[~]", completed: "[x]" } as const

/** Which runs of a range a handoff tells about, and how it names what it summarises. */
export interface MaterialRange {
  readonly fromOrdinal: number
  readonly toOrdinal: number
  readonly strategy: HandoffStrategy
  /**
   * Also runs rolled back at or after this instant: a fork made then still holds them.
   * (Timestamps have millisecond precision. A run rolled back in the very millisecond a
   * fork was made counts as rolled back after it: a run rolled back before a fork lies
   * inside the fork's range only if newer runs were made since, which takes longer.)
   */
  readonly asOf?: string | undefined
  readonly subject?: string | undefined
}

/** What the live runs of a range say, section by section, gathered as they are read in order. */
interface Notes {
  readonly goals: Array<string>
  readonly constraints: Array<string>
  readonly seenConstraints: Set<string>
  readonly openQuestions: Array<string>
  readonly failures: Array<string>
  /** The newest plan, and the run that reported it. */
  plan: { readonly item: TurnItem & { readonly type: "plan" }; readonly ordinal: number } | undefined
  readonly decisions: Array<string>
  /** The last change to each file, in the order of the last changes. */
  readonly files: Map<string, string>
  /** The last run of each command, in the order of the last runs. */
  readonly commands: Map<
    string,
    { readonly ordinal: number; readonly exitCode: number | null; readonly output: string }
  >
  readonly subagents: Array<string>
  readonly conversation: Array<string>
  liveRuns: number
}

/** How the runs are read: the state, and every text scrubbed (`clean` also makes it one line and clips it). */
interface Reader {
  readonly state: ThreadState
  readonly scrub: Scrub
  readonly clean: (text: string, cap: number) => string
}

/** The range's runs and the goal run's, asked for at once before any work (a compact state reads them in a few queries). */
const loadRange = (state: ThreadState, from: number, to: number, goalRun: Run | undefined): void => {
  if (goalRun !== undefined) needRuns(state, goalRun.ordinal, goalRun.ordinal, true)
  const brought: Array<ContextHandoffId> = []
  for (let o = from; o <= to; o++) {
    for (const item of itemsOf(state, runAt(state, o)!.id))
      if (item.type === "handoff_context") brought.push(item.handoffId)
  }
  needHandoffs(state, brought, true)
}

/** Every reasoning text of the covered runs (and of the goal run) is a secret. */
const scrubberOf = (state: ThreadState, from: number, to: number, goalRun: Run | undefined): Scrub => {
  const secrets: Array<string> = []
  const addSecrets = (run: Run) => {
    for (const item of itemsOf(state, run.id)) if (item.type === "reasoning") secrets.push(item.text)
  }
  for (let o = from; o <= to; o++) addSecrets(runAt(state, o)!)
  if (goalRun !== undefined && (goalRun.ordinal < from || goalRun.ordinal > to)) addSecrets(goalRun)
  return makeScrubber(secrets)
}

/** What one item of run `o` adds to the notes (an assistant message's text is the caller's). */
const noteItem = (notes: Notes, { clean, state }: Reader, item: TurnItem, o: number): void => {
  switch (item.type) {
    case "assistant_message":
      for (const match of item.text.matchAll(DECISION)) {
        notes.decisions.push(`${clean(match[1]!, LINE_CAP)} (run ${o})`)
      }
      break
    case "tool_call":
      if (item.name === "spawn_subagent" && item.output !== null) {
        notes.subagents.push(`Run ${o}: ${clean(item.input, 120)} → ${clean(item.output, LINE_CAP - 130)}`)
      }
      break
    case "command_execution":
      notes.commands.delete(item.command)
      notes.commands.set(item.command, { ordinal: o, exitCode: item.exitCode, output: item.output })
      break
    case "file_change":
      notes.files.delete(item.path)
      notes.files.set(item.path, `${clean(item.path, 200)} (${item.kind}, run ${o}): ${clean(item.summary, 180)}`)
      break
    case "plan":
      notes.plan = { item, ordinal: o }
      break
    case "approval_request":
      if (item.status === "open")
        notes.openQuestions.push(`Run ${o}: ${clean(item.question, LINE_CAP)} (awaiting answer)`)
      break
    case "error":
      notes.failures.push(`Run ${o} error${item.code ? ` ${item.code}` : ""}: ${clean(item.message, LINE_CAP)}`)
      break
    case "child_agent":
      if (item.status !== "running") {
        const outcome = item.result === null ? item.status : clean(item.result, LINE_CAP - 130)
        notes.subagents.push(`Run ${o}: ${clean(item.description, 120)} → ${outcome}`)
      }
      break
    case "handoff_context": {
      // Work brought in from another thread (a merged fork, a subagent's result) is
      // part of this conversation from then on: later summaries keep its gist.
      const brought = fullHandoff(state, item.handoffId)
      if (brought !== undefined && brought.threadId !== state.thread.id) {
        const gist = brought.payload.sections
          .filter((section) => broughtKinds.includes(section.kind))
          .flatMap((section) => section.lines)
          .slice(0, 6)
        for (const line of gist)
          notes.subagents.push(`Run ${o} took in ${brought.threadId}: ${clean(line, LINE_CAP - 60)}`)
      }
      break
    }
    case "user_message":
    case "reasoning":
      break
  }
}

/** What live run `o` adds to the notes: its ask, its constraints, its items, how it ended. */
const noteRun = (notes: Notes, reader: Reader, run: Run, o: number, goalRun: Run | undefined): void => {
  const { clean, scrub, state } = reader
  notes.liveRuns++
  const items = itemsOf(state, run.id)
  const rawUser = userTextOf(run, items)
  const user = scrub(oneLine(rawUser))
  if (run !== goalRun && user.length > 0) notes.goals.push(`Run ${o}: ${clip(user, LINE_CAP)}`)
  for (const sentence of rawUser.split(/\n|(?<=[.!?;])\s+/)) {
    const s = scrub(oneLine(sentence))
    if (s.length > 0 && CONSTRAINT.test(s) && !notes.seenConstraints.has(s)) {
      notes.seenConstraints.add(s)
      notes.constraints.push(`${clip(s, LINE_CAP)} (run ${o})`)
    }
  }
  let reply = ""
  for (const item of items) {
    if (item.type === "assistant_message") reply = reply.length === 0 ? item.text : `${reply}\n${item.text}`
    noteItem(notes, reader, item, o)
  }
  if (run.status === "failed") {
    const why = run.failure ? `${run.failure.reason}: ${clean(run.failure.message, 300)}` : "no reason recorded"
    notes.failures.push(`Run ${o} failed (${why})`)
  }
  const status = run.status === "completed" ? "" : ` [${run.status}]`
  const replyText = reply.length > 0 ? ` → assistant: ${clean(reply, SHORT_REPLY)}` : ""
  notes.conversation.push(`#${o} ${run.provider}${status}: user: ${clip(user, SHORT_USER)}${replyText}`)
}

/** Each command's last run; one that failed is also a known failure. */
const commandLines = (notes: Notes, clean: Reader["clean"]): Array<string> => {
  const lines: Array<string> = []
  for (const [command, last] of notes.commands) {
    const exit = last.exitCode === null ? "no exit code" : `exit ${last.exitCode}`
    lines.push(`\`${clean(command, 200)}\` → ${exit} (run ${last.ordinal})`)
    if (last.exitCode !== null && last.exitCode !== 0) {
      const tail = lastLine(last.output)
      notes.failures.push(
        `\`${clean(command, 200)}\` failed with exit ${last.exitCode} in run ${last.ordinal}${tail.length > 0 ? `: ${clean(tail, 160)}` : ""}`
      )
    }
  }
  return lines
}

const planLines = (plan: Notes["plan"], clean: Reader["clean"]): Array<string> =>
  plan === undefined
    ? []
    : [
        `As of run ${plan.ordinal}:`,
        ...plan.item.steps.map((step) => `${planMark[step.status]} ${clean(step.text, LINE_CAP)}`)
      ]

/** The newest ready checkpoint of the range, and the files it changed. */
const checkpointLines = (checkpoint: Checkpoint | undefined, clean: Reader["clean"]): Array<string> => {
  if (checkpoint === undefined) return []
  const where =
    checkpoint.kind === "git" && checkpoint.treeSha ? `git tree ${checkpoint.treeSha.slice(0, 12)}` : checkpoint.kind
  const lines = [
    `After run ${checkpoint.runOrdinal} (${where}); ${checkpoint.diffSummary.length} file(s) changed since the previous checkpoint`
  ]
  for (const entry of checkpoint.diffSummary.slice(0, MAX_DIFF_ENTRIES)) {
    lines.push(`${clean(entry.path, 200)} (${entry.change}, +${entry.additions} -${entry.deletions})`)
  }
  if (checkpoint.diffSummary.length > MAX_DIFF_ENTRIES) {
    lines.push(`… and ${checkpoint.diffSummary.length - MAX_DIFF_ENTRIES} more file(s)`)
  }
  return lines
}

/** Reads the live runs of a range into handoff material (scrubbed of reasoning). */
export const collectHandoffMaterial = (state: ThreadState, range: MaterialRange): HandoffMaterial => {
  const isLiveRun = (run: Run) =>
    isLive(run) || (range.asOf !== undefined && run.status === "rolled_back" && (run.rolledBackAt ?? "") >= range.asOf)
  /** The first run that counts as live (with `asOf`, rolled-back runs before it are read to tell). */
  const firstLiveRun = (): Run | undefined => {
    let first = 1
    while (first <= state.runCount && !isLiveOrdinal(state, first)) first++
    if (range.asOf !== undefined) {
      needRuns(state, 1, first - 1, false)
      for (let o = 1; o < first; o++) {
        const run = runAt(state, o)!
        if (isLiveRun(run)) return run
      }
    }
    return runAt(state, first)
  }
  const from = Math.max(1, Math.floor(range.fromOrdinal))
  const to = Math.min(state.runCount, Math.floor(range.toOrdinal))
  const full = range.strategy === "full_thread_summary" || range.strategy === "checkpoint_summary"
  needRuns(state, from, to, true)
  const goalRun = full ? firstLiveRun() : undefined
  loadRange(state, from, to, goalRun)
  const checkpoint = latestReadyCheckpoint(state, from, to)
  const scrub = scrubberOf(state, from, to, goalRun)
  const reader: Reader = { state, scrub, clean: (text, cap) => clip(scrub(oneLine(text)), cap) }

  const notes: Notes = {
    goals: [],
    constraints: [],
    seenConstraints: new Set(),
    openQuestions: [],
    failures: [],
    plan: undefined,
    decisions: [],
    files: new Map(),
    commands: new Map(),
    subagents: [],
    conversation: [],
    liveRuns: 0
  }
  if (goalRun !== undefined) {
    const goal = reader.clean(userTextOf(goalRun, itemsOf(state, goalRun.id)), LINE_CAP)
    notes.goals.push(`Overall goal (run ${goalRun.ordinal}): ${goal}`)
  }
  for (let o = from; o <= to; o++) {
    const run = runAt(state, o)!
    if (isLiveRun(run)) noteRun(notes, reader, run, o, goalRun)
  }
  // A command that failed adds a known failure, after the runs' own.
  const commands = commandLines(notes, reader.clean)
  const byKind: Record<HandoffSectionKind, ReadonlyArray<string>> = {
    goals: notes.goals,
    constraints: notes.constraints,
    open_questions: notes.openQuestions,
    known_failures: notes.failures,
    plan: planLines(notes.plan, reader.clean),
    decisions: notes.decisions,
    files_changed: [...notes.files.values()],
    checkpoint: checkpointLines(checkpoint, reader.clean),
    commands,
    subagent_results: notes.subagents,
    conversation: notes.conversation
  }
  const pinned = goalRun === undefined ? 0 : 1
  return {
    strategy: range.strategy,
    subject: range.subject,
    from,
    to,
    liveRuns: notes.liveRuns,
    drafts: handoffSectionOrder.map((kind) => ({ kind, lines: byKind[kind], pinned: kind === "goals" ? pinned : 0 }))
  }
}
