/**
 * A handoff's material: the covered runs of the app thread read once into plain lines,
 * section by section (goals, constraints, plan, decisions, files, commands, ...), every
 * text scrubbed of the runs' hidden reasoning. `HandoffBuilder` sizes and renders it.
 */
import type { ContextHandoffId, HandoffSectionKind, HandoffStrategy, Run, TurnItem } from "@skein/domain"
import { HandoffSectionKind as HandoffSectionKindSchema } from "@skein/domain"
import type { ThreadState } from "../store/ThreadState.js"
import { fullHandoff, isLiveOrdinal, itemsOf, needHandoffs, needRuns, runAt } from "../store/ThreadState.js"
import { latestReadyCheckpoint } from "./CheckpointLookup.js"
import { isLiveRun as isLive } from "./Coverage.js"

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
const REDACTED = "[redacted]"

const CONSTRAINT = /\b(must|never|don't|do not|always|only|should not|shouldn't|avoid|without)\b/i
const DECISION = /^\s*(?:[-*]\s*)?decision:\s*(.+?)\s*$/gim

const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim()

const clip = (text: string, cap: number): string => (text.length <= cap ? text : `${text.slice(0, cap - 1)}…`)

// ---------------------------------------------------------------------------------------
// Scrubbing reasoning text out of emitted text
// ---------------------------------------------------------------------------------------

type Scrub = (text: string) => string

const identity: Scrub = (text) => text

/**
 * A scrubber replacing every occurrence of the given secrets with "[redacted]". Linear in
 * the text: secrets are indexed by their first three characters (with a small bitmap in
 * front), so a thousand secrets cost about what one does.
 */
export const makeScrubber = (texts: Iterable<string>): Scrub => {
  const secrets = new Set<string>()
  for (const text of texts) {
    const whole = text.trim()
    if (whole.length === 0) continue
    secrets.add(whole)
    secrets.add(oneLine(whole))
    for (const line of whole.split("\n")) {
      const l = line.trim()
      if (l.length > 0) secrets.add(l)
    }
  }
  if (secrets.size === 0) return identity
  const short = [...secrets].filter((s) => s.length < 3)
  const long = [...secrets].filter((s) => s.length >= 3).sort((a, b) => b.length - a.length)
  // A bitmap about 16 slots per secret (a power of two, 256 to 65,536) keeps misses cheap.
  let size = 256
  while (size < long.length * 16 && size < 65_536) size *= 2
  const mask = size - 1
  const bloom = new Uint8Array(size)
  const index = new Map<number, Array<string>>()
  for (const s of long) {
    const c0 = s.charCodeAt(0)
    const c1 = s.charCodeAt(1)
    const c2 = s.charCodeAt(2)
    bloom[(c0 * 961 + c1 * 31 + c2) & mask] = 1
    const key = c0 * 4294967296 + c1 * 65536 + c2
    const bucket = index.get(key)
    if (bucket) bucket.push(s)
    else index.set(key, [s])
  }
  return (text) => {
    let out = ""
    let last = 0
    let changed = false
    let i = 0
    if (long.length > 0) {
      const end = text.length - 3
      while (i <= end) {
        const c0 = text.charCodeAt(i)
        const c1 = text.charCodeAt(i + 1)
        const c2 = text.charCodeAt(i + 2)
        if (bloom[(c0 * 961 + c1 * 31 + c2) & mask] === 1) {
          const bucket = index.get(c0 * 4294967296 + c1 * 65536 + c2)
          const hit = bucket?.find((s) => text.startsWith(s, i))
          if (hit !== undefined) {
            out += text.slice(last, i) + REDACTED
            i += hit.length
            last = i
            changed = true
            continue
          }
        }
        i++
      }
    }
    let result = changed ? out + text.slice(last) : text
    for (const s of short) if (result.includes(s)) result = result.split(s).join(REDACTED)
    return result
  }
}

// ---------------------------------------------------------------------------------------
// Collecting the raw sections of a range
// ---------------------------------------------------------------------------------------

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

/** Reads the live runs of a range into handoff material (scrubbed of reasoning). */
export const collectHandoffMaterial = (state: ThreadState, range: MaterialRange): HandoffMaterial => {
  const request = range
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
  const from = Math.max(1, Math.floor(request.fromOrdinal))
  const to = Math.min(state.runCount, Math.floor(request.toOrdinal))
  const full = request.strategy === "full_thread_summary" || request.strategy === "checkpoint_summary"
  // What it reads, asked for at once before any work (a compact state reads it in a few queries).
  needRuns(state, from, to, true)
  const goalRun = full ? firstLiveRun() : undefined
  if (goalRun !== undefined) needRuns(state, goalRun.ordinal, goalRun.ordinal, true)
  const brought: Array<ContextHandoffId> = []
  for (let o = from; o <= to; o++) {
    for (const item of itemsOf(state, runAt(state, o)!.id))
      if (item.type === "handoff_context") brought.push(item.handoffId)
  }
  needHandoffs(state, brought, true)
  const checkpoint = latestReadyCheckpoint(state, from, to)

  // Every reasoning text of the covered runs (and of the goal run) is a secret.
  const secrets: Array<string> = []
  const addSecrets = (run: Run) => {
    for (const item of itemsOf(state, run.id)) if (item.type === "reasoning") secrets.push(item.text)
  }
  for (let o = from; o <= to; o++) addSecrets(runAt(state, o)!)
  if (goalRun !== undefined && (goalRun.ordinal < from || goalRun.ordinal > to)) addSecrets(goalRun)
  const scrub: Scrub = makeScrubber(secrets)
  const clean = (text: string, cap: number) => clip(scrub(oneLine(text)), cap)

  const goals: Array<string> = []
  let pinned = 0
  if (goalRun !== undefined) {
    goals.push(
      `Overall goal (run ${goalRun.ordinal}): ${clean(userTextOf(goalRun, itemsOf(state, goalRun.id)), LINE_CAP)}`
    )
    pinned = 1
  }
  const constraints: Array<string> = []
  const seenConstraints = new Set<string>()
  const openQuestions: Array<string> = []
  const failures: Array<string> = []
  let plan: (TurnItem & { readonly type: "plan" }) | undefined
  let planOrdinal = 0
  const decisions: Array<string> = []
  const files = new Map<string, string>()
  const commands = new Map<
    string,
    { readonly ordinal: number; readonly exitCode: number | null; readonly output: string }
  >()
  const subagents: Array<string> = []
  const conversation: Array<string> = []
  let liveRuns = 0

  for (let o = from; o <= to; o++) {
    const run = runAt(state, o)!
    if (!isLiveRun(run)) continue
    liveRuns++
    const items = itemsOf(state, run.id)
    const rawUser = userTextOf(run, items)
    const user = scrub(oneLine(rawUser))
    if (run !== goalRun && user.length > 0) goals.push(`Run ${o}: ${clip(user, LINE_CAP)}`)
    for (const sentence of rawUser.split(/\n|(?<=[.!?;])\s+/)) {
      const s = scrub(oneLine(sentence))
      if (s.length > 0 && CONSTRAINT.test(s) && !seenConstraints.has(s)) {
        seenConstraints.add(s)
        constraints.push(`${clip(s, LINE_CAP)} (run ${o})`)
      }
    }
    let reply = ""
    for (const item of items) {
      switch (item.type) {
        case "assistant_message": {
          reply = reply.length === 0 ? item.text : `${reply}\n${item.text}`
          for (const match of item.text.matchAll(DECISION)) {
            decisions.push(`${clean(match[1]!, LINE_CAP)} (run ${o})`)
          }
          break
        }
        case "tool_call":
          if (item.name === "spawn_subagent" && item.output !== null) {
            subagents.push(`Run ${o}: ${clean(item.input, 120)} → ${clean(item.output, LINE_CAP - 130)}`)
          }
          break
        case "command_execution":
          commands.delete(item.command)
          commands.set(item.command, { ordinal: o, exitCode: item.exitCode, output: item.output })
          break
        case "file_change":
          files.delete(item.path)
          files.set(item.path, `${clean(item.path, 200)} (${item.kind}, run ${o}): ${clean(item.summary, 180)}`)
          break
        case "plan":
          plan = item
          planOrdinal = o
          break
        case "approval_request":
          if (item.status === "open")
            openQuestions.push(`Run ${o}: ${clean(item.question, LINE_CAP)} (awaiting answer)`)
          break
        case "error":
          failures.push(`Run ${o} error${item.code ? ` ${item.code}` : ""}: ${clean(item.message, LINE_CAP)}`)
          break
        case "child_agent":
          if (item.status !== "running") {
            const outcome = item.result === null ? item.status : clean(item.result, LINE_CAP - 130)
            subagents.push(`Run ${o}: ${clean(item.description, 120)} → ${outcome}`)
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
              subagents.push(`Run ${o} took in ${brought.threadId}: ${clean(line, LINE_CAP - 60)}`)
          }
          break
        }
        case "user_message":
        case "reasoning":
          break
      }
    }
    if (run.status === "failed") {
      const why = run.failure ? `${run.failure.reason}: ${clean(run.failure.message, 300)}` : "no reason recorded"
      failures.push(`Run ${o} failed (${why})`)
    }
    const status = run.status === "completed" ? "" : ` [${run.status}]`
    const replyText = reply.length > 0 ? ` → assistant: ${clean(reply, SHORT_REPLY)}` : ""
    conversation.push(`#${o} ${run.provider}${status}: user: ${clip(user, SHORT_USER)}${replyText}`)
  }

  const commandLines: Array<string> = []
  for (const [command, last] of commands) {
    const exit = last.exitCode === null ? "no exit code" : `exit ${last.exitCode}`
    commandLines.push(`\`${clean(command, 200)}\` → ${exit} (run ${last.ordinal})`)
    if (last.exitCode !== null && last.exitCode !== 0) {
      const tail = lastLine(last.output)
      failures.push(
        `\`${clean(command, 200)}\` failed with exit ${last.exitCode} in run ${last.ordinal}${tail.length > 0 ? `: ${clean(tail, 160)}` : ""}`
      )
    }
  }

  const planLines: Array<string> =
    plan === undefined
      ? []
      : [
          `As of run ${planOrdinal}:`,
          ...plan.steps.map((step) => `${planMark[step.status]} ${clean(step.text, LINE_CAP)}`)
        ]

  const checkpointLines: Array<string> = []
  if (checkpoint !== undefined) {
    const where =
      checkpoint.kind === "git" && checkpoint.treeSha ? `git tree ${checkpoint.treeSha.slice(0, 12)}` : checkpoint.kind
    checkpointLines.push(
      `After run ${checkpoint.runOrdinal} (${where}); ${checkpoint.diffSummary.length} file(s) changed since the previous checkpoint`
    )
    for (const entry of checkpoint.diffSummary.slice(0, MAX_DIFF_ENTRIES)) {
      checkpointLines.push(`${clean(entry.path, 200)} (${entry.change}, +${entry.additions} -${entry.deletions})`)
    }
    if (checkpoint.diffSummary.length > MAX_DIFF_ENTRIES) {
      checkpointLines.push(`… and ${checkpoint.diffSummary.length - MAX_DIFF_ENTRIES} more file(s)`)
    }
  }

  const byKind: Record<HandoffSectionKind, ReadonlyArray<string>> = {
    goals,
    constraints,
    open_questions: openQuestions,
    known_failures: failures,
    plan: planLines,
    decisions,
    files_changed: [...files.values()],
    checkpoint: checkpointLines,
    commands: commandLines,
    subagent_results: subagents,
    conversation
  }
  return {
    strategy: request.strategy,
    subject: request.subject,
    from,
    to,
    liveRuns,
    drafts: handoffSectionOrder.map((kind) => ({ kind, lines: byKind[kind], pinned: kind === "goals" ? pinned : 0 }))
  }
}

// ---------------------------------------------------------------------------------------
// Rendering and budgeting
// ---------------------------------------------------------------------------------------
