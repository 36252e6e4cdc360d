/**
 * A Codex session (the port's ProviderSessionHandle): one `codex app-server` process,
 * spoken to through a JSON-RPC peer, its messages decoded by CodexEvents. See
 * CodexAdapter for what the driver does.
 */
import type {
  ApprovalDecision,
  NativeThreadHandle,
  ProviderSessionHandle,
  TurnInput,
  TurnEventSink
} from "@skein/domain"
import { ProviderFailure } from "@skein/domain"
import { Deferred, Effect, Either, Exit, Schema } from "effect"
import type { Scope } from "effect"
import { clip, handoffPreamble } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import { failureOf } from "../agents/AgentOptions.js"
import type { WaitingApprovals } from "../agents/Approvals.js"
import { makeWaitingApprovals } from "../agents/Approvals.js"
import * as JsonRpcPeer from "../agents/JsonRpcPeer.js"
import type { TurnSlots } from "../agents/TurnSlot.js"
import { makeTurnSlots } from "../agents/TurnSlot.js"
import type { LocatedBinary } from "../binary/AgentBinary.js"
import type { LineProcess } from "../process/LineProcess.js"
import { LineProcess as Lines } from "../process/LineProcess.js"
import * as TurnEvents from "../process/TurnEvents.js"
import type { CodexAdapterOptions } from "./CodexAdapter.js"
import type { ActiveTurn } from "./CodexEvents.js"
import { makeCodexEvents } from "./CodexEvents.js"
import type { ClientMethod, InitializeParams, ThreadSettings, UserTextInput } from "./CodexProtocol.js"
import { Results, unreadNotifications } from "./CodexProtocol.js"
import * as Fs from "node:fs"

const INITIALIZE_TIMEOUT_MS = 30_000
const TURNS_PAGE = 100
const MAX_TURN_PAGES = 1000

export const openSession = (
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

    const turns = makeTurnSlots<ActiveTurn>()
    const approvals = makeWaitingApprovals<JsonRpcPeer.RpcId>()

    const settings: ThreadSettings = {
      cwd,
      ...(options.askForApproval === undefined ? {} : { approvalPolicy: options.askForApproval }),
      ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox })
    }

    const close = (reason: JsonRpcPeer.FailAll) =>
      Effect.sync(() => {
        peer.failAll(reason)
        for (const [threadId, turn] of turns.drain()) {
          const why = reason(`a turn on thread ${threadId}`)
          Deferred.unsafeDone(turn.turnId, Exit.fail(why))
          turn.queue.end(Exit.fail(why))
        }
        approvals.clear()
      })
    yield* Effect.addFinalizer(() => close(() => failure("error", "the Codex session was closed")))

    const { endTurn, warn, heldReport, onNotification, onServerRequest } = makeCodexEvents({
      provider,
      failure,
      policy,
      turns,
      approvals,
      peer: () => peer,
      later: proc.later
    })
    const peer: JsonRpcPeer.JsonRpcPeer = JsonRpcPeer.make({
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

    yield* initialize(call, proc, failure)
    yield* peer.notify("initialized")

    return {
      pid: proc.pid,
      ...codexThreads(call, settings, options.model ?? null, failure),
      ...codexTurns({ turns, approvals, call, peer, endTurn, failure, scope }),
      summarise: () => Effect.fail(failure("unsupported", "the Codex driver does not write handoff summaries")),
      exited: proc.exited
    } satisfies ProviderSessionHandle
  })

/** A request to Codex with its result decoded (CodexSession's `call`). */
type Call = <M extends ClientMethod>(
  method: M,
  params: unknown,
  onResult?: (result: unknown) => void
) => Effect.Effect<(typeof Results)[M]["Type"], ProviderFailure>

/** The thread operations of the port: start, resume, fork and roll back, as Codex requests. */
const codexThreads = (call: Call, settings: ThreadSettings, defaultModel: string | null, failure: Failure) => {
  const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })

  const withModel = (model: string | null) => {
    const chosen = model ?? defaultModel
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
      })
  } satisfies Pick<ProviderSessionHandle, "startThread" | "resumeThread" | "forkThread" | "rollbackThread">
}

/** The handshake's request: Skein as the client, the notifications it never reads turned off. */
const initialize = (call: Call, proc: LineProcess, failure: Failure): Effect.Effect<void, ProviderFailure> => {
  const params: InitializeParams = {
    clientInfo: { name: "skein", title: "Skein", version: "0.1.0" },
    capabilities: {
      experimentalApi: false,
      requestAttestation: false,
      optOutNotificationMethods: unreadNotifications
    }
  }
  return call("initialize", params).pipe(
    Effect.asVoid,
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
}

/** The turn operations of the port: a turn (its events), an interrupt, an approval's answer. */
const codexTurns = (session: {
  readonly turns: TurnSlots<ActiveTurn>
  readonly approvals: WaitingApprovals<JsonRpcPeer.RpcId>
  readonly call: Call
  readonly peer: JsonRpcPeer.JsonRpcPeer
  readonly endTurn: (threadId: string, turn: ActiveTurn) => void
  readonly failure: Failure
  readonly scope: Scope.Scope
}) => {
  const { turns, approvals, call, peer, endTurn, failure, scope } = session
  const runTurn = <E>(input: TurnInput, onEvents: TurnEventSink<E>): Effect.Effect<void, ProviderFailure | E> =>
    Effect.gen(function* () {
      const threadId = input.nativeRef
      const turn: ActiveTurn = {
        queue: yield* TurnEvents.make(input.itemDelayMs ?? 0),
        turnId: yield* Deferred.make<string, ProviderFailure>(),
        id: null,
        usageReport: undefined
      }
      if (!turns.claim(threadId, turn)) {
        return yield* Effect.fail(failure("error", `a turn is already running on Codex thread ${threadId}`))
      }
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
        turns.current(threadId) === turn ? interrupt(threadId).pipe(Effect.ignore, Effect.forkIn(scope)) : Effect.void
      )
      yield* turn.queue.deliver(onEvents).pipe(Effect.ensuring(abandon))
    })

  const interrupt = (threadId: string): Effect.Effect<void, ProviderFailure> =>
    Effect.suspend(() => {
      const turn = turns.current(threadId)
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

  return { runTurn, interrupt, respondApproval } satisfies Pick<
    ProviderSessionHandle,
    "runTurn" | "interrupt" | "respondApproval"
  >
}
