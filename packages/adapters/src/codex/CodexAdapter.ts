/**
 * The Codex driver: one `codex app-server` process per session (a Skein session is one
 * provider instance and workspace), serving every Codex thread of that session.
 *
 * - Threads: `thread/start`; `thread/resume` and `thread/fork` with `excludeTurns`, so
 *   the server never sends a thread's whole history (history, when the driver needs
 *   it, is paged with `thread/turns/list`). A resume works in a fresh process: that is
 *   how a thread continues after Skein or the process restarted (cold resume).
 * - Turns: `turn/start` answers at once with the turn's id (reported as TurnStarted);
 *   items arrive as `item/completed` notifications and the end as `turn/completed`.
 *   A handoff block goes ahead of the user's message in the same turn's input
 *   (delivery `preamble`), so the model reads it in that very request and Codex stores
 *   it with the turn.
 * - Fork at a turn: `thread/fork` with `lastTurnId` (inclusive). Rollback: the turn is
 *   looked up with `thread/turns/list`, then `thread/revert` drops it and every later turn
 *   (a thread this process has not loaded, as after a restart, is resumed first).
 * - Approvals: Codex's requests surface as open `approval_request` items until a client
 *   answers (`respondApproval`), unless the instance's policy answers them itself.
 * - Unknown notifications are ignored; lines that do not decode are logged and skipped;
 *   stderr is drained into a tail kept for error messages.
 */
import type {
  ApprovalDecision,
  NativeThreadHandle,
  ProviderAdapter,
  ProviderSessionHandle,
  TurnInput,
  TurnItemContent,
  TurnUsage,
  TurnEventSink
} from "@skein/domain"
import { defaultCapabilities, makeId, ProviderFailure } from "@skein/domain"
import type { ProviderCapabilities } from "@skein/domain"
import { Deferred, Effect, Either, Exit, ParseResult, Schema } from "effect"
import type { Scope } from "effect"
import { clip, handoffPreamble } from "../agents/AgentCommon.js"
import type { AgentOptions } from "../agents/AgentOptions.js"
import { failureOf, makeAgentAdapter } from "../agents/AgentOptions.js"
import { makeWaitingApprovals, routeApproval } from "../agents/Approvals.js"
import type { AgentBinarySpec, LocatedBinary } from "../binary/AgentBinary.js"
import { platformSuffixes } from "../binary/AgentBinary.js"
import * as JsonRpcPeer from "../agents/JsonRpcPeer.js"
import type { LineProcess } from "../process/LineProcess.js"
import { LineProcess as Lines, scopedEnv } from "../process/LineProcess.js"
import * as TurnEvents from "../process/TurnEvents.js"
import { mayBeTurnItem, planItemOf, turnItemsOf } from "./CodexItems.js"
import type {
  ApprovalMethod,
  AskForApproval,
  ClientMethod,
  InitializeParams,
  SandboxMode,
  ThreadSettings,
  UserTextInput
} from "./CodexProtocol.js"
import { ApprovalRequests, Notifications, Results, unreadNotifications } from "./CodexProtocol.js"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The Codex versions this driver was tested with. */
export const codexBinarySpec: AgentBinarySpec = {
  driver: "codex",
  executable: "codex",
  npmPackage: "@openai/codex",
  tested: { min: "0.171.0", below: "0.172.0" },
  platformPackages: platformSuffixes().map((suffix) => `@openai/codex-${suffix}`),
  nativeIn: (platformDir) => {
    const vendor = Path.join(platformDir, "vendor")
    try {
      return Fs.readdirSync(vendor).map((target) => Path.join(vendor, target, "bin", "codex"))
    } catch {
      return []
    }
  }
}

/**
 * What the Codex driver can do: resume, fork at a turn, native rollback; handoffs as a
 * preamble. An approval waits in its turn: once the turn is over, Codex takes no decision.
 */
export const codexCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: true,
  fork: "at_turn",
  rollback: "native",
  handoffDelivery: ["preamble"],
  summarise: false,
  approvalsOutliveTurn: false
})

/** Codex's config directory is CODEX_HOME; `stateDir` is the working directory of threads without a workspace. */
export interface CodexAdapterOptions extends AgentOptions {
  /** When Codex asks for approval (its `approvalPolicy`); default: Codex's own configuration. */
  readonly askForApproval?: AskForApproval | undefined
  /** Codex's sandbox for commands; default: Codex's own configuration. */
  readonly sandbox?: SandboxMode | undefined
}

const INITIALIZE_TIMEOUT_MS = 30_000
const TURNS_PAGE = 100
const MAX_TURN_PAGES = 1000

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

export const makeCodexAdapter = (options: CodexAdapterOptions): ProviderAdapter => {
  const env = scopedEnv(options.env ?? {}, ["CODEX_HOME"])
  return makeAgentAdapter({
    spec: codexBinarySpec,
    options,
    env,
    runtimeMode: `approvals=${options.approvals ?? "ask"};ask=${options.askForApproval ?? "default"};sandbox=${options.sandbox ?? "default"}`,
    open: (binary, workspace) => openSession(options, env, binary, workspace)
  })
}

interface ActiveTurn {
  readonly queue: TurnEvents.TurnQueue
  readonly turnId: Deferred.Deferred<string, ProviderFailure>
  id: string | null
  /** The params of the turn's latest `thread/tokenUsage/updated`, read at the turn's end. */
  usageReport: unknown
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

const openSession = (
  options: CodexAdapterOptions,
  env: Record<string, string>,
  binary: LocatedBinary,
  workspace: string | null
): Effect.Effect<ProviderSessionHandle, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const provider = options.name
    const failure = failureOf(provider)
    const policy = options.approvals ?? "ask"
    const cwd = workspace ?? options.stateDir
    yield* Effect.sync(() => Fs.mkdirSync(cwd, { recursive: true }))

    const proc: LineProcess = yield* Lines.spawn({
      command: binary.path,
      args: [...binary.leadingArgs, "app-server"],
      env,
      cwd,
      graceMs: options.graceMs,
      provider
    })
    const scope = yield* Effect.scope

    const turns = new Map<string, ActiveTurn>()
    /** Codex's requests waiting for a client, by approval id: the JSON-RPC id to answer. */
    const approvals = makeWaitingApprovals<JsonRpcPeer.RpcId>()

    const settings: ThreadSettings = {
      cwd,
      ...(options.askForApproval === undefined ? {} : { approvalPolicy: options.askForApproval }),
      ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox })
    }

    const close = (reason: JsonRpcPeer.FailAll) =>
      Effect.sync(() => {
        peer.failAll(reason)
        for (const [threadId, turn] of turns) {
          const why = reason(`a turn on thread ${threadId}`)
          Deferred.unsafeDone(turn.turnId, Exit.fail(why))
          turn.queue.end(Exit.fail(why))
          turns.delete(threadId)
        }
        approvals.clear()
      })
    yield* Effect.addFinalizer(() => close(() => failure("error", "the Codex session was closed")))

    const endTurn = (threadId: string, turn: ActiveTurn) => {
      if (turns.get(threadId) === turn) turns.delete(threadId)
      approvals.dropThread(threadId)
    }

    /** The running turn a message of `threadId` belongs to (a message of another turn id is stale). */
    const turnOf = (threadId: string, turnId: string | null): ActiveTurn | undefined => {
      const turn = turns.get(threadId)
      if (turn === undefined) return undefined
      return turnId === null || turn.id === null || turn.id === turnId ? turn : undefined
    }

    const warn = (message: string, detail?: unknown) =>
      proc.later(detail === undefined ? Effect.logWarning(message) : Effect.logWarning(message, detail))

    /** The items an item or plan notification adds to its turn, once decoded. */
    const readReport = (method: string, params: unknown): ReadonlyArray<TurnItemContent> => {
      const decoded = notificationDecoders[method as keyof typeof Notifications](params)
      if (Either.isLeft(decoded)) {
        warn(`${provider}: skipping a ${method} notification that does not decode`, decoded.left.message)
        return []
      }
      return method === "item/completed"
        ? turnItemsOf((decoded.right as (typeof Notifications)["item/completed"]["Type"]).item)
        : [planItemOf(decoded.right as (typeof Notifications)["turn/plan/updated"]["Type"])]
    }

    /** The turn's usage from its latest report, if that decodes. */
    const usageOf = (turn: ActiveTurn): TurnUsage | undefined => {
      if (turn.usageReport === undefined) return undefined
      const decoded = notificationDecoders["thread/tokenUsage/updated"](turn.usageReport)
      if (Either.isLeft(decoded)) {
        warn(
          `${provider}: skipping a thread/tokenUsage/updated notification that does not decode`,
          decoded.left.message
        )
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
      if (method === "thread/tokenUsage/updated") turn.usageReport = params
      else if (method === "turn/plan/updated" || mayBeTurnItem((params as { readonly item?: unknown }).item)) {
        turn.queue.offerLater(() => readReport(method, params).map((item) => ({ _tag: "Item" as const, item })))
      }
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
          return proc.later(
            Effect.logDebug(`${provider}: Codex reported an error on ${notice.threadId}`, notice.error.message)
          )
        }
        case "turn/completed": {
          const { threadId, turn: done } = value as (typeof Notifications)["turn/completed"]["Type"]
          const turn = turnOf(threadId, done.id)
          if (turn === undefined || done.status === "inProgress") return
          endTurn(threadId, turn)
          if (done.status === "failed") {
            const message = done.error?.message ?? "the turn failed"
            turn.queue.offer({ _tag: "Item", item: { type: "error", message, code: null } })
            turn.queue.end(Exit.fail(failure("error", `Codex failed the turn: ${message}`)))
            return
          }
          const usage = done.status === "interrupted" ? undefined : usageOf(turn)
          turn.queue.offer(
            done.status === "interrupted"
              ? { _tag: "TurnInterrupted", turnRef: done.id }
              : { _tag: "TurnCompleted", turnRef: done.id, ...(usage ? { usage } : {}) }
          )
          turn.queue.end(Exit.void)
          return
        }
        // Reports of no running turn (item/completed, turn/plan/updated, thread/tokenUsage/updated): nothing to do.
      }
    }

    const onServerRequest = (id: number | string, method: string, params: unknown): void => {
      if (!(method in ApprovalRequests)) {
        // Codex waits for an answer to every request: refuse the ones Skein does not handle.
        return proc.later(
          peer.respond(id, { error: { code: -32601, message: `Skein does not handle ${method}` } }).pipe(Effect.ignore)
        )
      }
      const decoded: Either.Either<
        | (typeof ApprovalRequests)["item/commandExecution/requestApproval"]["Type"]
        | (typeof ApprovalRequests)["item/fileChange/requestApproval"]["Type"],
        ParseResult.ParseError
      > = approvalDecoders[method as ApprovalMethod](params)
      if (Either.isLeft(decoded)) {
        warn(`${provider}: declining a ${method} request that does not decode`, decoded.left.message)
        return proc.later(peer.respond(id, { result: { decision: "decline" } }).pipe(Effect.ignore))
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
        return proc.later(peer.respond(id, { result: { decision: taken } }).pipe(Effect.ignore))
      }
      const approvalId = approvals.open(request.threadId, id)
      turn.queue.offer({
        _tag: "Item",
        item: { type: "approval_request", approvalId, question: asked, status: "open" }
      })
    }

    const peer = JsonRpcPeer.make({
      provider,
      send: proc.send,
      onNotification,
      onRequest: onServerRequest,
      // A running turn's report: held as it is, and decoded with the turn's other events.
      intercept: heldReport,
      warn
    })

    // The reader: when stdout ends the process is gone, and with it every pending reply and turn.
    yield* JsonRpcPeer.serve(peer, proc, (how) =>
      close((what) => failure("crash", `the codex app-server process ${how} (during ${what})`))
    )

    const call = <M extends ClientMethod>(
      method: M,
      params: unknown,
      onResult?: (result: unknown) => void
    ): Effect.Effect<(typeof Results)[M]["Type"], ProviderFailure> =>
      Effect.gen(function* () {
        const raw = yield* peer.call(method, params, onResult)
        const result = Schema.decodeUnknownEither(Results[method] as Schema.Schema<(typeof Results)[M]["Type"]>)(raw)
        if (Either.isLeft(result)) {
          return yield* Effect.fail(failure("error", `unexpected reply to ${method}: ${result.left.message}`))
        }
        return result.right
      })

    const initialize: InitializeParams = {
      clientInfo: { name: "skein", title: "Skein", version: "0.1.0" },
      capabilities: {
        experimentalApi: false,
        requestAttestation: false,
        optOutNotificationMethods: unreadNotifications
      }
    }
    yield* call("initialize", initialize).pipe(
      Effect.timeoutFail({
        duration: INITIALIZE_TIMEOUT_MS,
        onTimeout: () => failure("timeout", `codex app-server did not answer initialize in ${INITIALIZE_TIMEOUT_MS} ms`)
      }),
      Effect.catchTag("ProviderFailure", (error) =>
        Effect.flatMap(proc.stderrTail, (tail) =>
          Effect.fail(
            new ProviderFailure({
              ...error,
              kind: error.kind === "timeout" ? "timeout" : "spawn",
              detail: `codex app-server did not start: ${error.detail}${tail.trim() ? `; stderr: ${clip(tail.trim(), 800)}` : ""}`
            })
          )
        )
      )
    )
    yield* peer.notify("initialized")

    const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })

    const withModel = (model: string | null) => {
      const chosen = model ?? options.model ?? null
      return chosen === null ? settings : { ...settings, model: chosen }
    }

    /** Every turn of a thread, oldest first, page by page. */
    const listTurns = (threadId: string) =>
      Effect.gen(function* () {
        const all: Array<{ readonly id: string; readonly status: string }> = []
        let cursor: string | null = null
        for (let page = 0; page < MAX_TURN_PAGES; page++) {
          const result: (typeof Results)["thread/turns/list"]["Type"] = yield* call("thread/turns/list", {
            threadId,
            sortDirection: "asc",
            limit: TURNS_PAGE,
            ...(cursor === null ? {} : { cursor })
          })
          all.push(...result.data)
          cursor = result.nextCursor
          if (cursor === null || result.data.length === 0) break
        }
        return all
      })

    const turnNotFound = (error: ProviderFailure, threadId: string, turnRef: string) =>
      /turn not found/i.test(error.detail)
        ? failure("error", `Codex thread ${threadId} has no turn ${turnRef}`, "turn_not_found")
        : error

    const runTurn = <E>(input: TurnInput, onEvents: TurnEventSink<E>): Effect.Effect<void, ProviderFailure | E> =>
      Effect.gen(function* () {
        const threadId = input.nativeRef
        if (turns.has(threadId)) {
          return yield* Effect.fail(failure("error", `a turn is already running on Codex thread ${threadId}`))
        }
        const turn: ActiveTurn = {
          queue: yield* TurnEvents.make(input.itemDelayMs ?? 0),
          turnId: yield* Deferred.make<string, ProviderFailure>(),
          id: null,
          usageReport: undefined
        }
        turns.set(threadId, turn)
        const text = (value: string): UserTextInput => ({ type: "text", text: value, text_elements: [] })
        const delivered = input.handoff === null ? [] : [text(handoffPreamble(input.handoff))]
        const model = input.model ?? null
        yield* call(
          "turn/start",
          { threadId, input: [...delivered, text(input.message)], ...(model === null ? {} : { model }) },
          (result) => {
            // In the reader, before any notification that follows the reply.
            const id = (result as { turn?: { id?: unknown } }).turn?.id
            if (typeof id !== "string") return
            turn.id = id
            Deferred.unsafeDone(turn.turnId, Exit.succeed(id))
            turn.queue.offer({ _tag: "TurnStarted", turnRef: id, receivedAt: Date.now() })
          }
        ).pipe(
          Effect.tapError((error) =>
            Effect.sync(() => {
              endTurn(threadId, turn)
              Deferred.unsafeDone(turn.turnId, Exit.fail(error))
              turn.queue.end(Exit.fail(error))
            })
          ),
          Effect.ignore
        )
        // A consumer that stops reading before the turn ended interrupts the Codex turn.
        const abandon = Effect.suspend(() =>
          turns.get(threadId) === turn ? interrupt(threadId).pipe(Effect.ignore, Effect.forkIn(scope)) : Effect.void
        )
        yield* turn.queue.deliver(onEvents).pipe(Effect.ensuring(abandon))
      })

    const interrupt = (threadId: string): Effect.Effect<void, ProviderFailure> =>
      Effect.suspend(() => {
        const turn = turns.get(threadId)
        if (turn === undefined) return Effect.void
        return Effect.flatMap(Deferred.await(turn.turnId), (turnId) =>
          Effect.asVoid(call("turn/interrupt", { threadId, turnId }))
        )
      })

    const respondApproval = (threadId: string, approvalId: string, decision: ApprovalDecision) =>
      Effect.suspend(() => {
        const rpcId = approvals.take(threadId, approvalId)
        if (rpcId === undefined) {
          return Effect.fail(
            failure(
              "error",
              `Codex is not waiting for approval ${approvalId} on thread ${threadId} (its turn ended)`,
              "approval_not_pending"
            )
          )
        }
        return peer.respond(rpcId, { result: { decision } })
      })

    const resume = (threadId: string) =>
      call("thread/resume", { threadId, excludeTurns: true, ...settings }).pipe(
        Effect.asVoid,
        Effect.mapError((error) =>
          error.kind === "crash"
            ? error
            : failure(
                "resume_failed",
                `Codex cannot resume thread ${threadId}: ${error.detail}`,
                /no rollout found|invalid session id/i.test(error.detail) ? "conversation_not_found" : undefined
              )
        )
      )

    return {
      pid: proc.pid,
      startThread: ({ model }) =>
        Effect.map(call("thread/start", withModel(model)), (result) => strong(result.thread.id)),
      resumeThread: resume,
      forkThread: (threadId, atTurnRef) =>
        call("thread/fork", {
          threadId,
          excludeTurns: true,
          ...settings,
          ...(atTurnRef === null ? {} : { lastTurnId: atTurnRef })
        }).pipe(
          Effect.map((result) => strong(result.thread.id)),
          Effect.mapError((error) => (atTurnRef === null ? error : turnNotFound(error, threadId, atTurnRef)))
        ),
      rollbackThread: (threadId, beforeTurnRef) =>
        Effect.gen(function* () {
          const all = yield* listTurns(threadId)
          const at = all.findIndex((turn) => turn.id === beforeTurnRef)
          if (at < 0) {
            return yield* failure(
              "error",
              `Codex thread ${threadId} has no turn ${beforeTurnRef} (it has ${all.length})`,
              "turn_not_found"
            )
          }
          if (all.slice(at).some((turn) => turn.status === "inProgress")) {
            return yield* failure("error", `Codex thread ${threadId} has a turn in progress; interrupt it first`)
          }
          const revert = call("thread/revert", { threadId, beforeTurnId: beforeTurnRef })
          yield* revert.pipe(
            // thread/revert serves only a thread this process has loaded (turns/list reads the
            // rollout without it): after a restart, load it the way a cold resume does, then revert.
            Effect.catchIf(
              (error) => error.kind !== "crash" && /thread not found/i.test(error.detail),
              () => Effect.zipRight(resume(threadId), revert)
            ),
            Effect.mapError((error) => turnNotFound(error, threadId, beforeTurnRef))
          )
        }),
      runTurn,
      interrupt,
      respondApproval,
      summarise: () => Effect.fail(failure("unsupported", "the Codex driver does not write handoff summaries")),
      exited: proc.exited
    } satisfies ProviderSessionHandle
  })
