/**
 * What a `claude -p` process writes, decoded into its turn's events: assistant and
 * user messages (text, reasoning, tool calls and results, subagents), the `result` line
 * that ends the turn, control replies, and permission requests (answered by the policy
 * or left waiting). Lines of other types, and subagents' own messages, are ignored.
 */
import type { AgentTools, ApprovalDecision, TurnItemContent, TurnUsage } from "@skein/domain"
import { makeId } from "@skein/domain"
import type { ProviderFailure } from "@skein/domain"
import { Deferred, Effect, Either, Exit, Schema } from "effect"
import type { Scope } from "effect"
import type { ApprovalPolicy } from "../agents/AgentCommon.js"
import { clip } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import type { WaitingApprovals } from "../agents/Approvals.js"
import { routeApproval } from "../agents/Approvals.js"
import type { LineProcess } from "../process/LineProcess.js"
import type * as TurnEvents from "../process/TurnEvents.js"
import type { ToolUse } from "./ClaudeItems.js"
import { childEnded, childStarted, permissionQuestion, resultText, SUBAGENT_TOOLS, toolItem } from "./ClaudeItems.js"
import type { Launches } from "./ClaudeLaunches.js"
import type { ResultLine } from "./ClaudeProtocol.js"
import { controlError, controlSuccess, knownLineTypes, Line } from "./ClaudeProtocol.js"

/** What the instance remembers across its sessions. */
export interface Shared {
  readonly launches: Launches
  /** Turn (first message uuid) → its last message, for turns that ran in this Skein. */
  readonly turnEnds: Map<string, string>
  /** Turn → the message it followed, when known. */
  readonly turnStarts: Map<string, string | null>
  /** Session → its last message, when this Skein knows it. */
  readonly tips: Map<string, string>
  /** Session → the model it was started with. */
  readonly models: Map<string, string>
  /** Session → Skein's tools, given to its processes as an MCP server. */
  readonly tools: Map<string, AgentTools>
}

export interface Turn {
  readonly uuid: string
  readonly queue: TurnEvents.TurnQueue
  readonly toolUses: Map<string, ToolUse>
  readonly childrenDone: Set<string>
  /**
   * Messages steered into the turn that Claude Code has not echoed yet. One it takes
   * at a tool's result joins the running turn; one that comes after the turn's answer
   * runs as a turn of its own right after: the turn goes on until its result.
   */
  readonly steers: Set<string>
  /** Tokens of the results before the last, when steering made the turn several. */
  spent: TurnUsage | undefined
  last: string | null
  interrupting: boolean
}

export interface Waiting {
  readonly requestId: string
  readonly input: unknown
}

export interface ClaudeProcess {
  readonly sessionId: string
  readonly proc: LineProcess
  readonly scope: Scope.CloseableScope
  readonly control: Map<string, Deferred.Deferred<void, ProviderFailure>>
  /** Permission requests waiting for a client (the thread is the session). */
  readonly approvals: WaitingApprovals<Waiting>
  turn: Turn | null
  /** Whether a user message was written to this process. */
  sent: boolean
  /** How many control requests were sent to it (their ids count up). */
  controlSent: number
}

export const decodeLine = Schema.decodeUnknownEither(Line)

/** What the decoding of a process's lines works on. */
export interface ClaudeEventsContext {
  readonly provider: string
  readonly failure: Failure
  readonly policy: ApprovalPolicy
  readonly shared: Shared
}

export const makeClaudeEvents = (context: ClaudeEventsContext) => {
  const { provider, failure, policy, shared } = context

  const offer = (turn: Turn, item: TurnItemContent) => turn.queue.offer({ _tag: "Item", item })

  const endTurn = (cp: ClaudeProcess, result: ResultLine) => {
    const turn = cp.turn
    if (turn === null) return
    const ok = result.subtype === "success" && result.is_error !== true
    const usage = addUsage(turn.spent, result.usage)
    if (ok && turn.steers.size > 0) {
      // A steered message is still to come, as the next turn: this one goes on.
      turn.spent = usage
      return
    }
    cp.turn = null
    cp.approvals.clear()
    // The turn's first message is on disk now: the session starts like any other from here on.
    shared.launches.clear(cp.sessionId)
    if (turn.last !== null) {
      shared.turnEnds.set(turn.uuid, turn.last)
      shared.tips.set(cp.sessionId, turn.last)
    }
    if (ok) {
      turn.queue.offer({ _tag: "TurnCompleted", turnRef: turn.uuid, ...(usage === undefined ? {} : { usage }) })
      turn.queue.end(Exit.void)
    } else if (turn.interrupting || result.terminal_reason === "aborted_streaming") {
      turn.queue.offer({ _tag: "TurnInterrupted", turnRef: turn.uuid })
      turn.queue.end(Exit.void)
    } else {
      const why = [...(result.errors ?? []), ...(result.result ? [result.result] : [])].join("; ") || result.subtype
      offer(turn, { type: "error", message: clip(why, 4000), code: result.subtype })
      turn.queue.end(
        Exit.fail(failure("error", `Claude Code ended the turn with ${result.subtype}: ${clip(why, 1000)}`))
      )
    }
  }

  const onPermission = (
    cp: ClaudeProcess,
    requestId: string,
    toolName: string,
    input: unknown,
    description?: string
  ): void => {
    const question = permissionQuestion(toolName, input, description)
    const turn = cp.turn
    const route = routeApproval(policy, turn !== null)
    if (route !== "open" || turn === null) {
      const taken = route === "open" ? "decline" : route
      if (turn !== null) {
        offer(turn, { type: "approval_request", approvalId: makeId.approval(), question, status: taken })
      }
      return cp.proc.later(cp.proc.send(controlSuccess(requestId, answerOf(taken, input))).pipe(Effect.ignore))
    }
    const approvalId = cp.approvals.open(cp.sessionId, { requestId, input })
    offer(turn, { type: "approval_request", approvalId, question, status: "open" })
  }

  const onLine = (cp: ClaudeProcess, raw: unknown): void => {
    if (typeof raw !== "object" || raw === null) return
    const type = (raw as { type?: unknown }).type
    const subtype = (raw as { subtype?: unknown }).subtype
    if (typeof type !== "string" || !knownLineTypes.has(type)) return
    if (type === "system" && subtype !== "task_notification") return
    const decoded = decodeLine(raw)
    if (Either.isLeft(decoded)) {
      return cp.proc.later(
        Effect.logWarning(`${provider}: skipping a ${type} line that does not decode`, decoded.left.message)
      )
    }
    const line = decoded.right
    const turn = cp.turn
    switch (line.type) {
      case "control_response": {
        const waiting = cp.control.get(line.response.request_id)
        if (waiting === undefined) return
        cp.control.delete(line.response.request_id)
        Deferred.unsafeDone(
          waiting,
          line.response.subtype === "success"
            ? Exit.void
            : Exit.fail(
                failure("error", `Claude Code refused a control request: ${line.response.error ?? "no reason given"}`)
              )
        )
        return
      }
      case "control_request":
        if ("tool_name" in line.request) {
          const request = line.request as { tool_name: string; input: unknown; description?: string }
          return onPermission(cp, line.request_id, request.tool_name, request.input, request.description)
        }
        return cp.proc.later(
          cp.proc
            .send(controlError(line.request_id, `Skein does not handle ${line.request.subtype}`))
            .pipe(Effect.ignore)
        )
      case "assistant": {
        if (turn === null || (line.parent_tool_use_id ?? null) !== null) return
        if (line.uuid !== undefined) turn.last = line.uuid
        for (const block of line.message.content) {
          if (block.type === "text" && "text" in block && block.text.length > 0) {
            offer(turn, { type: "assistant_message", text: block.text })
          } else if (block.type === "thinking" && "thinking" in block && block.thinking.length > 0) {
            offer(turn, { type: "reasoning", text: block.thinking })
          } else if (block.type === "tool_use" && "id" in block && "name" in block) {
            const use = { name: block.name, input: block.input }
            turn.toolUses.set(block.id, use)
            if (SUBAGENT_TOOLS.has(block.name)) offer(turn, childStarted(block.id, use))
          }
        }
        return
      }
      case "user": {
        if (turn === null || (line.parent_tool_use_id ?? null) !== null) return
        if (line.isReplay === true) {
          if (line.uuid !== undefined) turn.steers.delete(line.uuid)
          return
        }
        if (line.uuid !== undefined) turn.last = line.uuid
        if (typeof line.message.content === "string") return
        for (const block of line.message.content) {
          if (block.type !== "tool_result" || !("tool_use_id" in block)) continue
          const use = turn.toolUses.get(block.tool_use_id)
          const text = resultText(block.content)
          const isError = block.is_error === true
          if (use !== undefined && SUBAGENT_TOOLS.has(use.name)) {
            if (!turn.childrenDone.has(block.tool_use_id)) {
              turn.childrenDone.add(block.tool_use_id)
              offer(turn, childEnded(block.tool_use_id, use, { ok: !isError, result: text, nativeThreadRef: null }))
            }
          } else if (use !== undefined) {
            offer(turn, toolItem(use, text, isError))
          }
        }
        return
      }
      case "system": {
        if (turn === null || line.tool_use_id === undefined || turn.childrenDone.has(line.tool_use_id)) return
        turn.childrenDone.add(line.tool_use_id)
        offer(
          turn,
          childEnded(line.tool_use_id, turn.toolUses.get(line.tool_use_id), {
            ok: line.status === "completed",
            result: line.summary ?? line.status,
            nativeThreadRef: line.task_id ?? null
          })
        )
        return
      }
      case "result":
        return endTurn(cp, line)
    }
  }

  return { onLine }
}

/** The tokens of a turn so far and of one more result. */
const addUsage = (spent: TurnUsage | undefined, usage: ResultLine["usage"]): TurnUsage | undefined => {
  if (usage === undefined) return spent
  const cached = (spent?.cachedInputTokens ?? 0) + (usage.cache_read_input_tokens ?? 0)
  return {
    inputTokens: (spent?.inputTokens ?? 0) + (usage.input_tokens ?? 0),
    outputTokens: (spent?.outputTokens ?? 0) + (usage.output_tokens ?? 0),
    ...(spent?.cachedInputTokens === undefined && usage.cache_read_input_tokens === undefined
      ? {}
      : { cachedInputTokens: cached })
  }
}

export /** Claude Code's answer to a permission request for a decision. */
const answerOf = (decision: ApprovalDecision, input: unknown) =>
  decision === "accept"
    ? ({ behavior: "allow", updatedInput: input } as const)
    : decision === "decline"
      ? ({ behavior: "deny", message: "The user declined this action." } as const)
      : ({ behavior: "deny", message: "The user cancelled this turn.", interrupt: true } as const)
