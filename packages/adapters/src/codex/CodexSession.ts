/**
 * A Codex session (the port's ProviderSessionHandle): one `codex app-server` process,
 * spoken to through a JSON-RPC peer, its messages decoded by CodexEvents, the port's
 * operations in CodexThreads and CodexTurns. See CodexAdapter for what the driver does.
 */
import type { ProviderSessionHandle } from "@skein/domain"
import { ProviderFailure } from "@skein/domain"
import { Deferred, Effect, Either, Exit, Schema } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import { clip } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import { failureOf } from "../agents/AgentOptions.js"
import { makeWaitingApprovals } from "../agents/Approvals.js"
import * as JsonRpcPeer from "../agents/JsonRpcPeer.js"
import { makeTurnSlots } from "../agents/TurnSlot.js"
import type { LocatedBinary } from "../binary/AgentBinary.js"
import type { LineProcess } from "../process/LineProcess.js"
import { LineProcess as Lines } from "../process/LineProcess.js"
import type { CodexAdapterOptions } from "./CodexAdapter.js"
import type { ActiveTurn } from "./CodexEvents.js"
import { makeCodexEvents } from "./CodexEvents.js"
import type { ClientMethod, InitializeParams, ThreadSettings } from "./CodexProtocol.js"
import { Results, unreadNotifications } from "./CodexProtocol.js"
import type { Call } from "./CodexThreads.js"
import { codexThreads } from "./CodexThreads.js"
import { codexTurns } from "./CodexTurns.js"

const INITIALIZE_TIMEOUT_MS = 30_000

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

    const { endTurn, stopWaiting, warn, heldReport, onNotification, onServerRequest } = makeCodexEvents({
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
      ...codexTurns({ turns, approvals, call, peer, endTurn, stopWaiting, failure, scope }),
      summarise: () => Effect.fail(failure("unsupported", "the Codex driver does not write handoff summaries")),
      exited: proc.exited
    } satisfies ProviderSessionHandle
  })

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
