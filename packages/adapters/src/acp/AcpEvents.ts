/**
 * What an ACP agent tells the driver, made into a turn's events, and what it asks
 * answered: `session/update` reports of a running prompt become items (AcpItems);
 * `session/request_permission` is an approval, answered by the instance's policy or
 * left open for a client; `fs/read_text_file` and `fs/write_text_file` are served
 * inside the session's workspace only; any other request is refused with a JSON-RPC
 * error. Reports of a session with no prompt running (a `session/load` replaying its
 * history, commands, modes) are ignored; messages that do not decode are logged and
 * skipped, or refused when they wait for an answer.
 */
import type { ApprovalDecision, ProviderFailure, TurnItemContent } from "@skein/domain"
import { makeId } from "@skein/domain"
import { Effect, Either, Exit, Schema } from "effect"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import type { ApprovalPolicy } from "../agents/AgentCommon.js"
import { clip, renderInput } from "../agents/AgentCommon.js"
import type { WaitingApprovals } from "../agents/Approvals.js"
import { routeApproval } from "../agents/Approvals.js"
import type { JsonRpcPeer, RpcId } from "../agents/JsonRpcPeer.js"
import type { TurnSlots } from "../agents/TurnSlot.js"
import type * as TurnEvents from "../process/TurnEvents.js"
import { containedPath } from "../workspace/WorkspacePath.js"
import type { TurnAssembler } from "./AcpItems.js"
import type { PermissionOption, PromptResult } from "./AcpProtocol.js"
import {
  ErrorCodes,
  itemUpdates,
  ReadTextFile,
  RequestPermission,
  SessionUpdate,
  WriteTextFile
} from "./AcpProtocol.js"

/** The largest file `fs/read_text_file` hands to an agent. */
const MAX_READ_BYTES = 16 * 1024 * 1024

/** A prompt running on an ACP session. */
export interface ActiveTurn {
  readonly sessionId: string
  readonly turnRef: string
  readonly queue: TurnEvents.TurnQueue
  readonly assembler: TurnAssembler
  /** The permission requests of this prompt that wait for an answer (answered `cancelled` on a cancel). */
  readonly asking: Set<RpcId>
}

/** A permission request waiting for a client: its JSON-RPC id and the options to choose from. */
export interface WaitingPermission {
  readonly id: RpcId
  readonly options: ReadonlyArray<PermissionOption>
}

export interface AcpEventsContext {
  readonly provider: string
  readonly policy: ApprovalPolicy
  /** The session's working directory: the only place its files may be read or written. */
  readonly workspace: string
  readonly turns: TurnSlots<ActiveTurn>
  readonly approvals: WaitingApprovals<WaitingPermission>
  /** The sessions this process opened (a request naming another is refused). */
  readonly sessions: ReadonlySet<string>
  readonly peer: () => JsonRpcPeer
  /** Runs an effect from the reader (see `LineProcess.later`). */
  readonly later: (effect: Effect.Effect<void>) => void
}

const decodeUpdate = Schema.decodeUnknownEither(Schema.Struct({ sessionId: Schema.String, update: SessionUpdate }))
const decodePermission = Schema.decodeUnknownEither(RequestPermission)
const decodeRead = Schema.decodeUnknownEither(ReadTextFile)
const decodeWrite = Schema.decodeUnknownEither(WriteTextFile)

/** The option that carries out `decision` (a one-time choice before a lasting one); null: cancel. */
export const optionFor = (options: ReadonlyArray<PermissionOption>, decision: ApprovalDecision): string | null => {
  const kinds =
    decision === "accept"
      ? ["allow_once", "allow_always"]
      : decision === "decline"
        ? ["reject_once", "reject_always"]
        : []
  for (const kind of kinds) {
    const option = options.find((o) => o.kind === kind)
    if (option !== undefined) return option.optionId
  }
  return null
}

/** The answer to a permission request: the chosen option, or `cancelled`. */
export const permissionAnswer = (options: ReadonlyArray<PermissionOption>, decision: ApprovalDecision) => {
  const optionId = optionFor(options, decision)
  return { outcome: optionId === null ? { outcome: "cancelled" } : { outcome: "selected", optionId } }
}

const questionOf = (request: Pick<RequestPermission, "toolCall">): string => {
  const title = request.toolCall.title ?? "a tool call"
  const input = request.toolCall.rawInput === undefined ? "" : ` ${renderInput(request.toolCall.rawInput)}`
  return clip(`Allow ${title}?${input}`, 1000)
}

/** Lines `line` (1-based) to `line + limit` of `text`. */
const linesOf = (text: string, line: number | null | undefined, limit: number | null | undefined): string => {
  if ((line ?? 1) <= 1 && limit == null) return text
  const lines = text.split("\n")
  const from = Math.max(0, (line ?? 1) - 1)
  return lines.slice(from, limit == null ? undefined : from + limit).join("\n")
}

type Answer = { readonly result: unknown } | { readonly error: { readonly code: number; readonly message: string } }
const refuse = (code: number, message: string): Answer => ({ error: { code, message } })

export const makeAcpEvents = (context: AcpEventsContext) => {
  const { provider, policy, turns, approvals, later } = context
  const respond = (id: RpcId, body: Answer) => later(Effect.ignore(context.peer().respond(id, body)))
  const warn = (message: string, detail?: unknown) =>
    later(detail === undefined ? Effect.logWarning(message) : Effect.logWarning(message, detail))

  const offerItems = (turn: ActiveTurn, items: ReadonlyArray<TurnItemContent>) => {
    for (const item of items) turn.queue.offer({ _tag: "Item", item })
  }

  /** Ends a prompt with its reply (or its failure): what is still open goes first, then the end. */
  const endTurn = (turn: ActiveTurn, outcome: Either.Either<PromptResult, ProviderFailure>) => {
    turns.release(turn.sessionId, turn)
    approvals.dropThread(turn.sessionId)
    turn.asking.clear()
    offerItems(turn, turn.assembler.finish())
    if (Either.isLeft(outcome)) return turn.queue.end(Exit.fail(outcome.left))
    const { stopReason, usage } = outcome.right
    if (stopReason === "cancelled") {
      turn.queue.offer({ _tag: "TurnInterrupted", turnRef: turn.turnRef })
      return turn.queue.end(Exit.void)
    }
    if (stopReason !== "end_turn") {
      offerItems(turn, [{ type: "error", message: `the agent stopped: ${stopReason}`, code: stopReason }])
    }
    turn.queue.offer({
      _tag: "TurnCompleted",
      turnRef: turn.turnRef,
      ...(usage == null
        ? {}
        : {
            usage: {
              inputTokens: usage.inputTokens,
              outputTokens: usage.outputTokens,
              ...(usage.cachedReadTokens == null ? {} : { cachedInputTokens: usage.cachedReadTokens })
            }
          })
    })
    turn.queue.end(Exit.void)
  }

  const onNotification = (method: string, params: unknown): void => {
    if (method !== "session/update") return
    const sessionId = (params as { sessionId?: unknown } | undefined)?.sessionId
    const kind = (params as { update?: { sessionUpdate?: unknown } } | undefined)?.update?.sessionUpdate
    if (typeof sessionId !== "string" || typeof kind !== "string" || !itemUpdates.has(kind)) return
    const turn = turns.current(sessionId)
    if (turn === undefined) return
    const decoded = decodeUpdate(params)
    if (Either.isLeft(decoded))
      return warn(`${provider}: skipping a ${kind} update that does not decode`, decoded.left.message)
    offerItems(turn, turn.assembler.update(decoded.right.update))
  }

  const onPermission = (id: RpcId, params: unknown): void => {
    const decoded = decodePermission(params)
    if (Either.isLeft(decoded)) return respond(id, refuse(ErrorCodes.invalidParams, decoded.left.message))
    const request = decoded.right
    const question = questionOf(request)
    const turn = turns.current(request.sessionId)
    const route = routeApproval(policy, turn !== undefined)
    if (route !== "open" || turn === undefined) {
      const taken = route === "open" ? "decline" : route
      if (turn !== undefined) {
        offerItems(turn, [{ type: "approval_request", approvalId: makeId.approval(), question, status: taken }])
      }
      return respond(id, { result: permissionAnswer(request.options, taken) })
    }
    const approvalId = approvals.open(request.sessionId, { id, options: request.options })
    turn.asking.add(id)
    offerItems(turn, [{ type: "approval_request", approvalId, question, status: "open" }])
  }

  /** The file an agent named, if it lies in the workspace (ACP paths are absolute). */
  const fileOf = (sessionId: string, path: string): Either.Either<string, Answer> => {
    if (!context.sessions.has(sessionId)) {
      return Either.left(refuse(ErrorCodes.invalidParams, `no session ${sessionId} in this process`))
    }
    const relative = Path.isAbsolute(path) ? Path.relative(context.workspace, path) : path
    const contained = containedPath(context.workspace, relative)
    return contained._tag === "Inside"
      ? Either.right(contained.target)
      : Either.left(refuse(ErrorCodes.invalidParams, `${path}: ${contained.problem} (${context.workspace})`))
  }

  const serveFile = (id: RpcId, io: (file: string) => Promise<unknown>, sessionId: string, path: string) => {
    const file = fileOf(sessionId, path)
    if (Either.isLeft(file)) return respond(id, file.left)
    later(
      Effect.tryPromise(() => io(file.right)).pipe(
        Effect.match({
          onSuccess: (result): Answer => ({ result }),
          onFailure: (error): Answer => {
            const cause = error.error as NodeJS.ErrnoException
            return cause?.code === "ENOENT"
              ? refuse(ErrorCodes.resourceNotFound, `${path} does not exist`)
              : refuse(ErrorCodes.invalidParams, `${path}: ${cause?.code ?? String(cause)}`)
          }
        }),
        Effect.flatMap((answer) => Effect.ignore(context.peer().respond(id, answer)))
      )
    )
  }

  const onRead = (id: RpcId, params: unknown): void => {
    const decoded = decodeRead(params)
    if (Either.isLeft(decoded)) return respond(id, refuse(ErrorCodes.invalidParams, decoded.left.message))
    const { sessionId, path, line, limit } = decoded.right
    serveFile(
      id,
      async (file) => {
        const size = (await Fs.stat(file)).size
        if (size > MAX_READ_BYTES) throw Object.assign(new Error("too large"), { code: "EFBIG" })
        return { content: linesOf(await Fs.readFile(file, "utf8"), line, limit) }
      },
      sessionId,
      path
    )
  }

  const onWrite = (id: RpcId, params: unknown): void => {
    const decoded = decodeWrite(params)
    if (Either.isLeft(decoded)) return respond(id, refuse(ErrorCodes.invalidParams, decoded.left.message))
    const { sessionId, path, content } = decoded.right
    serveFile(
      id,
      async (file) => {
        await Fs.mkdir(Path.dirname(file), { recursive: true })
        await Fs.writeFile(file, content, "utf8")
        return {}
      },
      sessionId,
      path
    )
  }

  const onRequest = (id: RpcId, method: string, params: unknown): void => {
    switch (method) {
      case "session/request_permission":
        return onPermission(id, params)
      case "fs/read_text_file":
        return onRead(id, params)
      case "fs/write_text_file":
        return onWrite(id, params)
      default:
        return respond(id, refuse(ErrorCodes.methodNotFound, `Skein does not offer ${method}`))
    }
  }

  return { endTurn, onNotification, onRequest, warn }
}
