/**
 * The scripted provider's adapter: each session is one scripted provider process
 * (see main.ts) spoken to over JSON lines. Requests are correlated by id; event
 * notifications go to the running turn of their native thread.
 */
import { createRequire } from "node:module"
import { Effect, Exit, Option, Schema } from "effect"
import type { Scope } from "effect"
import type {
  NativeThreadHandle,
  ProviderAdapter,
  TurnEventSink,
  ProviderName,
  ProviderSessionHandle,
  TurnInput
} from "@skein/domain"
import { ProviderCapabilities, ProviderFailure } from "@skein/domain"
import { LineProcess, scopedEnv } from "../process/LineProcess.js"
import * as TurnEvents from "../process/TurnEvents.js"
import { Incoming } from "./Protocol.js"
import type { Failure } from "../agents/AgentOptions.js"
import { failureOf } from "../agents/AgentOptions.js"
import type { ScriptedRequests } from "./ScriptedRequests.js"
import { makeScriptedRequests } from "./ScriptedRequests.js"

export interface ScriptedAdapterOptions {
  readonly name: ProviderName
  readonly capabilities: ProviderCapabilities
  /** Where the provider keeps its native threads; shared by all sessions of the instance. */
  readonly stateDir: string
  /** The executable and leading arguments; default: this Node running the bundled scripted server. */
  readonly command?: ReadonlyArray<string> | undefined
  /** Variables for the process beyond PATH and HOME. */
  readonly env?: Record<string, string> | undefined
  readonly model?: string | null | undefined
  /** SIGTERM → SIGKILL grace when a session closes. Default 2000 ms. */
  readonly graceMs?: number | undefined
}

/** The path of the compiled scripted provider program (`@skein/adapters/scripted-server`). */
export const scriptedServerPath = (): string =>
  createRequire(import.meta.url).resolve("@skein/adapters/scripted-server")

const INITIALIZE_TIMEOUT_MS = 15_000

export const makeScriptedAdapter = (options: ScriptedAdapterOptions): ProviderAdapter => ({
  name: options.name,
  driver: "scripted",
  capabilities: options.capabilities,
  runtimeMode: "default",
  model: options.model ?? null,
  openSession: () => openSession(options)
})

/** The scripted provider's process: its state directory, name and capabilities as arguments. */
const spawnProvider = (options: ScriptedAdapterOptions, failure: Failure) =>
  Effect.suspend(() => {
    const [command, ...leading] = options.command ?? [process.execPath, scriptedServerPath()]
    if (command === undefined) return Effect.fail(failure("spawn", "the configured command is empty"))
    return LineProcess.spawn({
      command,
      args: [
        ...leading,
        "--state-dir",
        options.stateDir,
        "--name",
        options.name,
        "--capabilities",
        JSON.stringify(Schema.encodeSync(ProviderCapabilities)(options.capabilities))
      ],
      env: scopedEnv(options.env ?? {}),
      graceMs: options.graceMs,
      provider: options.name
    })
  })

const openSession = (
  options: ScriptedAdapterOptions
): Effect.Effect<ProviderSessionHandle, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const provider = options.name
    const failure = failureOf(provider)
    const proc = yield* spawnProvider(options, failure)
    const scope = yield* Effect.scope

    const turns = new Map<string, TurnEvents.TurnQueue>()
    const requests = makeScriptedRequests(proc, failure)
    const { call } = requests
    yield* Effect.addFinalizer(() => requests.close(() => failure("error", "the provider session was closed")))

    const handleIncoming = (raw: unknown): void => {
      const decoded = Schema.decodeUnknownOption(Incoming)(raw)
      if (Option.isNone(decoded)) return proc.later(Effect.logDebug(`${provider}: ignoring an unexpected message`, raw))
      const message = decoded.value
      if ("id" in message) {
        requests.reply(
          message.id,
          "error" in message
            ? Exit.fail(failure(message.error.kind, message.error.message))
            : Exit.succeed(message.result)
        )
        return
      }
      const { event, nativeRef } = message.params
      const queue = turns.get(nativeRef)
      if (queue === undefined) return
      queue.offer(event)
      if (TurnEvents.isTerminal(event)) {
        turns.delete(nativeRef)
        queue.end(Exit.void)
      }
    }

    // The dispatcher: when stdout ends the process is gone, and so is every pending reply.
    yield* proc.readMessages(handleIncoming).pipe(
      Effect.zipRight(proc.exited),
      Effect.zipRight(proc.describeExit),
      Effect.flatMap((how) =>
        requests.close((method) => failure("crash", `the scripted provider process ${how} (during ${method})`))
      ),
      Effect.forkScoped
    )

    yield* call("initialize", {}).pipe(
      Effect.timeoutFail({
        duration: INITIALIZE_TIMEOUT_MS,
        onTimeout: () =>
          failure("timeout", `the scripted provider did not answer initialize in ${INITIALIZE_TIMEOUT_MS} ms`)
      })
    )

    const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })

    const runTurn = scriptedTurns({ turns, requests, failure, scope })

    return {
      pid: proc.pid,
      startThread: Effect.fnUntraced(function* ({ model, workspace }) {
        const result = yield* call("thread/start", { workspace, model: model ?? options.model ?? null })
        return strong(result.nativeRef)
      }),
      resumeThread: Effect.fnUntraced(function* (nativeRef) {
        yield* call("thread/resume", { nativeRef })
      }),
      forkThread: Effect.fn("ScriptedSession.forkThread")(function* (nativeRef, atTurnRef) {
        const result = yield* call("thread/fork", { nativeRef, atTurnRef })
        return strong(result.nativeRef)
      }),
      rollbackThread: Effect.fn("ScriptedSession.rollbackThread")(function* (nativeRef, beforeTurnRef) {
        yield* call("thread/rollback", { nativeRef, beforeTurnRef })
      }),
      runTurn,
      steer: Effect.fn("ScriptedSession.steer")(function* (nativeRef, message) {
        yield* call("turn/steer", { nativeRef, message })
      }),
      interrupt: Effect.fn("ScriptedSession.interrupt")(function* (nativeRef) {
        yield* call("turn/interrupt", { nativeRef })
      }),
      respondApproval: Effect.fn("ScriptedSession.respondApproval")(function* (nativeRef, approvalId, decision) {
        yield* call("approval/respond", { nativeRef, approvalId, decision })
      }),
      summarise: Effect.fn("ScriptedSession.summarise")(function* ({ budgetTokens, payload }) {
        const result = yield* call("summarise", { payload, budgetTokens })
        return result.text
      }),
      exited: proc.exited
    } satisfies ProviderSessionHandle
  })

/** What a turn of the scripted provider works with. */
interface ScriptedTurnsContext {
  /** The running turn of each native thread: its events' queue. */
  readonly turns: Map<string, TurnEvents.TurnQueue>
  readonly requests: ScriptedRequests
  readonly failure: Failure
  /** Where a turn abandoned by its caller is interrupted. */
  readonly scope: Scope.Scope
}

/** The port's `runTurn`: `turn/start`, whose reply comes after the turn's last event. */
const scriptedTurns = ({ turns, requests, failure, scope }: ScriptedTurnsContext) =>
  Effect.fnUntraced(function* <E>(input: TurnInput, onEvents: TurnEventSink<E>) {
    const queue = yield* TurnEvents.make(input.itemDelayMs ?? 0)
    if (turns.has(input.nativeRef)) {
      return yield* Effect.fail(failure("error", `a turn is already running on native thread ${input.nativeRef}`))
    }
    turns.set(input.nativeRef, queue)
    const unregister = () => {
      if (turns.get(input.nativeRef) === queue) turns.delete(input.nativeRef)
    }
    // Sent from this fiber, so the turn reaches the process before anything else runs;
    // its reply (after the turn's last event) ends the events, or fails them.
    yield* requests
      .request(
        "turn/start",
        { nativeRef: input.nativeRef, message: input.message, handoff: input.handoff, workspace: input.workspace },
        (reply) => {
          unregister()
          queue.end(Exit.isSuccess(reply) ? Exit.void : reply)
        }
      )
      .pipe(
        Effect.tapError((error) =>
          Effect.sync(() => {
            unregister()
            queue.end(Exit.fail(error))
          })
        )
      )
    // A consumer that stops reading before the turn ended interrupts the provider turn.
    const abandon = Effect.suspend(() =>
      turns.get(input.nativeRef) === queue
        ? requests.call("turn/interrupt", { nativeRef: input.nativeRef }).pipe(Effect.ignore, Effect.forkIn(scope))
        : Effect.void
    )
    yield* queue.deliver(onEvents).pipe(Effect.ensuring(abandon))
  })
