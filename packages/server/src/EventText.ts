/**
 * One line per turn item and per stored event, as `send`, `show` and `follow` print
 * them, and what a person does about an item. Pure.
 */
import type { Run, StoredEvent, TurnItem } from "@skein/domain"
import { oneLine, paint, plain, type Style } from "./CliStyle.js"
import { range } from "./CoverageText.js"

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
