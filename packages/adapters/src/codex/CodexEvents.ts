/**
 * What Codex's app-server tells the driver, decoded into a turn's events: item, plan
 * and usage reports of a running turn (held undecoded until the turn's events are handed
 * over), the turn's end, and approval requests (answered by the policy or left waiting).
 * Unknown notifications are ignored; messages that do not decode are logged and skipped.
 */
import type { ProviderFailure, TurnItemContent, TurnUsage } from "@skein/domain"
import { makeId } from "@skein/domain"
import { Effect, Either, Exit, ParseResult, Schema } from "effect"
import type { Deferred } from "effect"
import type { ApprovalPolicy } from "../agents/AgentCommon.js"
import { clip } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import type { WaitingApprovals } from "../agents/Approvals.js"
import { routeApproval } from "../agents/Approvals.js"
import type { JsonRpcPeer, RpcId } from "../agents/JsonRpcPeer.js"
import type { TurnSlots } from "../agents/TurnSlot.js"
import type * as TurnEvents from "../process/TurnEvents.js"
import type { TurnChildren } from "./CodexChildren.js"
import { makeChildWatch } from "./CodexChildren.js"
import { mayBeTurnItem, planItemOf, turnItemsOf } from "./CodexItems.js"
import type { ApprovalMethod } from "./CodexProtocol.js"
import { ApprovalRequests, Notifications } from "./CodexProtocol.js"

const decoderOf = (schema: Schema.Schema<any, any>) =>
  Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>)
const notificationDecoders = Object.fromEntries(
  Object.entries(Notifications).map(([method, schema]) => [method, decoderOf(schema)])
) as Record<keyof typeof Notifications, ReturnType<typeof decoderOf>>
const approvalDecoders = {
  "item/commandExecution/requestApproval": Schema.decodeUnknownEither(
    ApprovalRequests["item/commandExecution/requestApproval"]
  ),
  "item/fileChange/requestApproval": Schema.decodeUnknownEither(ApprovalRequests["item/fileChange/requestApproval"])
} as const

export interface ActiveTurn extends TurnChildren {
  /** The Codex thread it runs on. */
  readonly threadId: string
  readonly queue: TurnEvents.TurnQueue
  readonly turnId: Deferred.Deferred<string, ProviderFailure>
  id: string | null
  /** The params of the turn's latest `thread/tokenUsage/updated`, read at the turn's end. */
  usageReport: unknown
  /** Codex ended the turn while agents it started still run: its end, told once they have ended. */
  held: TurnEnd | null
}

/** How a turn that did not fail ended. */
interface TurnEnd {
  readonly turnRef: string
  readonly status: "completed" | "interrupted"
}

/**
 * The notifications that only report (items, the plan, token usage): read when the
 * turn's events are handed over, not as their lines arrive (TurnEvents, `offerLater`).
 */
const reports: ReadonlySet<string> = new Set(["item/completed", "turn/plan/updated", "thread/tokenUsage/updated"])

/** `params.threadId` and `params.turnId` of a message not yet decoded, when both are strings. */
const turnIdsOf = (params: unknown): { readonly threadId: string; readonly turnId: string } | undefined => {
  if (typeof params !== "object" || params === null) return undefined
  const { threadId, turnId } = params as { readonly threadId?: unknown; readonly turnId?: unknown }
  return typeof threadId === "string" && typeof turnId === "string" ? { threadId, turnId } : undefined
}

/** What the decoding of a session's messages works on. */
export interface CodexEventsContext {
  readonly provider: string
  readonly failure: Failure
  readonly policy: ApprovalPolicy
  readonly turns: TurnSlots<ActiveTurn>
  /** Codex's requests waiting for a client: the JSON-RPC id to answer. */
  readonly approvals: WaitingApprovals<RpcId>
  /** Answers Codex's requests. */
  readonly peer: () => JsonRpcPeer
  /** Runs an effect from the reader (see `LineProcess.later`). */
  readonly later: (effect: Effect.Effect<void>) => void
}

export const makeCodexEvents = (context: CodexEventsContext) => {
  const { provider, failure, policy, turns, approvals, later } = context
  const respond: JsonRpcPeer["respond"] = (id, body) => context.peer().respond(id, body)
  /** The task of each agent Codex spawned in this session, by its thread (CodexItems.childAgentsOf). */
  const childPrompts = new Map<string, string>()
  const children = makeChildWatch<ActiveTurn>()

  const endTurn = (threadId: string, turn: ActiveTurn) => {
    turns.release(threadId, turn)
    approvals.dropThread(threadId)
    children.forget(turn)
  }

  /** Ends a turn that did not fail: its slot released, its end event, its events' end. */
  const finish = (turn: ActiveTurn, end: TurnEnd) => {
    endTurn(turn.threadId, turn)
    const usage = end.status === "interrupted" ? undefined : usageOf(turn)
    turn.queue.offer(
      end.status === "interrupted"
        ? { _tag: "TurnInterrupted", turnRef: end.turnRef }
        : { _tag: "TurnCompleted", turnRef: end.turnRef, ...(usage ? { usage } : {}) }
    )
    turn.queue.end(Exit.void)
  }

  /** A turn held for its agents, interrupted: it ends now, as interrupted. */
  const stopWaiting = (turn: ActiveTurn) => {
    if (turn.held !== null && turns.current(turn.threadId) === turn) {
      finish(turn, { turnRef: turn.held.turnRef, status: "interrupted" })
    }
  }

  /** The end of a turn of an agent some running turn follows: its node updated, and the turn ended if it waited only for that. */
  const agentEnded = (threadId: string, params: unknown) => {
    const ended = children.agentTurnEnded(threadId, params)
    if (ended === undefined || turns.current(ended.owner.threadId) !== ended.owner) return
    ended.owner.queue.offer({ _tag: "Item", item: ended.item })
    if (ended.owner.held !== null && !children.running(ended.owner)) finish(ended.owner, ended.owner.held)
  }

  /** The running turn a message of `threadId` belongs to (a message of another turn id is stale). */
  const turnOf = (threadId: string, turnId: string | null): ActiveTurn | undefined => {
    const turn = turns.current(threadId)
    if (turn === undefined) return undefined
    return turnId === null || turn.id === null || turn.id === turnId ? turn : undefined
  }

  const warn = (message: string, detail?: unknown) =>
    later(detail === undefined ? Effect.logWarning(message) : Effect.logWarning(message, detail))

  /** The items an item or plan notification adds to its turn, once decoded. */
  const readReport = (method: string, params: unknown): ReadonlyArray<TurnItemContent> => {
    const decoded = notificationDecoders[method as keyof typeof Notifications](params)
    if (Either.isLeft(decoded)) {
      warn(`${provider}: skipping a ${method} notification that does not decode`, decoded.left.message)
      return []
    }
    return method === "item/completed"
      ? turnItemsOf((decoded.right as (typeof Notifications)["item/completed"]["Type"]).item, childPrompts)
      : [planItemOf(decoded.right as (typeof Notifications)["turn/plan/updated"]["Type"])]
  }

  /** The turn's usage from its latest report, if that decodes. */
  const usageOf = (turn: ActiveTurn): TurnUsage | undefined => {
    if (turn.usageReport === undefined) return undefined
    const decoded = notificationDecoders["thread/tokenUsage/updated"](turn.usageReport)
    if (Either.isLeft(decoded)) {
      warn(`${provider}: skipping a thread/tokenUsage/updated notification that does not decode`, decoded.left.message)
      return undefined
    }
    const last = (decoded.right as (typeof Notifications)["thread/tokenUsage/updated"]["Type"]).tokenUsage.last
    return {
      inputTokens: last.inputTokens,
      outputTokens: last.outputTokens,
      cachedInputTokens: last.cachedInputTokens
    }
  }

  /**
   * A report of a running turn, kept undecoded: an item or plan notification in the
   * turn's queue, the token usage on the turn (read at its end). False when it is not
   * one (another method, no such turn, ids that are not strings): that is decoded at
   * once, as any other message.
   */
  const heldReport = (method: string, params: unknown): boolean => {
    if (!reports.has(method)) return false
    const ids = turnIdsOf(params)
    const turn = ids === undefined ? undefined : turnOf(ids.threadId, ids.turnId)
    if (turn === undefined) return false
    const ended = method === "item/completed" ? children.noteReport(turn, (params as { item?: unknown }).item) : []
    if (method === "thread/tokenUsage/updated") turn.usageReport = params
    else if (method === "turn/plan/updated" || mayBeTurnItem((params as { readonly item?: unknown }).item)) {
      turn.queue.offerLater(() => readReport(method, params).map((item) => ({ _tag: "Item" as const, item })))
    }
    // Agents this report names whose own turn had ended already: their nodes, after it.
    for (const item of ended) turn.queue.offer({ _tag: "Item", item })
    // Else an item that maps to nothing (the user's message, which every turn has):
    // dropped here, not held, which would start the queue's timer for nothing.
    return true
  }

  const onNotification = (method: string, params: unknown): void => {
    if (!(method in Notifications)) return
    const decoded = notificationDecoders[method as keyof typeof Notifications](params)
    if (Either.isLeft(decoded)) {
      return warn(`${provider}: skipping a ${method} notification that does not decode`, decoded.left.message)
    }
    const value = decoded.right
    switch (method) {
      case "error": {
        const notice = value as (typeof Notifications)["error"]["Type"]
        return later(
          Effect.logDebug(`${provider}: Codex reported an error on ${notice.threadId}`, notice.error.message)
        )
      }
      case "turn/completed": {
        const { threadId, turn: done } = value as (typeof Notifications)["turn/completed"]["Type"]
        const turn = turnOf(threadId, done.id)
        if (turn === undefined) return agentEnded(threadId, params)
        if (done.status === "inProgress") return
        if (done.status === "failed") {
          endTurn(threadId, turn)
          const message = done.error?.message ?? "the turn failed"
          turn.queue.offer({ _tag: "Item", item: { type: "error", message, code: null } })
          turn.queue.end(Exit.fail(failure("error", `Codex failed the turn: ${message}`)))
          return
        }
        const end: TurnEnd = { turnRef: done.id, status: done.status === "interrupted" ? "interrupted" : "completed" }
        if (end.status === "completed" && children.running(turn)) {
          turn.held = end
          return
        }
        return finish(turn, end)
      }
      // Reports of no running turn (item/completed, turn/plan/updated, thread/tokenUsage/updated): nothing to do.
    }
  }

  const onServerRequest = (id: number | string, method: string, params: unknown): void => {
    if (!(method in ApprovalRequests)) {
      // Codex waits for an answer to every request: refuse the ones Skein does not handle.
      return later(
        respond(id, { error: { code: -32601, message: `Skein does not handle ${method}` } }).pipe(Effect.ignore)
      )
    }
    const decoded: Either.Either<
      | (typeof ApprovalRequests)["item/commandExecution/requestApproval"]["Type"]
      | (typeof ApprovalRequests)["item/fileChange/requestApproval"]["Type"],
      ParseResult.ParseError
    > = approvalDecoders[method as ApprovalMethod](params)
    if (Either.isLeft(decoded)) {
      warn(`${provider}: declining a ${method} request that does not decode`, decoded.left.message)
      return later(respond(id, { result: { decision: "decline" } }).pipe(Effect.ignore))
    }
    const request = decoded.right
    const question =
      method === "item/commandExecution/requestApproval"
        ? `Run \`${clip(("command" in request ? request.command : null) ?? "a command", 500)}\`?`
        : `Apply file changes${"grantRoot" in request && request.grantRoot ? ` (and allow writes under ${request.grantRoot})` : ""}?`
    const asked = request.reason ? `${question} ${clip(request.reason, 500)}` : question
    const turn = turnOf(request.threadId, request.turnId)
    const route = routeApproval(policy, turn !== undefined)
    if (route !== "open" || turn === undefined) {
      // Answered by the instance's policy (or nobody is there to ask: decline).
      const taken = route === "open" ? "decline" : route
      if (turn !== undefined) {
        turn.queue.offer({
          _tag: "Item",
          item: { type: "approval_request", approvalId: makeId.approval(), question: asked, status: taken }
        })
      }
      return later(respond(id, { result: { decision: taken } }).pipe(Effect.ignore))
    }
    const approvalId = approvals.open(request.threadId, id)
    turn.queue.offer({
      _tag: "Item",
      item: { type: "approval_request", approvalId, question: asked, status: "open" }
    })
  }

  return { endTurn, stopWaiting, turnOf, warn, heldReport, onNotification, onServerRequest }
}
