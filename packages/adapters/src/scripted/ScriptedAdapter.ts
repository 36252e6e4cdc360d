/**
 * The scripted provider's adapter: each session is one scripted provider process
 * (see main.ts) spoken to over JSON lines. Requests are correlated by id; event
 * notifications go to the running turn of their native thread.
 */
import { createRequire } from "node:module"
import { Deferred, Effect, Either, Exit, Option, Schema } from "effect"
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
import type { Method, ParamsOf, ResultOf } from "./Protocol.js"
import { Incoming, Methods } from "./Protocol.js"

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

const openSession = (
  options: ScriptedAdapterOptions
): Effect.Effect<ProviderSessionHandle, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const provider = options.name
    const failure = (kind: ProviderFailure["kind"], detail: string) => new ProviderFailure({ provider, kind, detail })
    const [command, ...leading] = options.command ?? [process.execPath, scriptedServerPath()]
    if (command === undefined) return yield* Effect.fail(failure("spawn", "the configured command is empty"))

    const proc = yield* LineProcess.spawn({
      command,
      args: [
        ...leading,
        "--state-dir",
        options.stateDir,
        "--name",
        provider,
        "--capabilities",
        JSON.stringify(Schema.encodeSync(ProviderCapabilities)(options.capabilities))
      ],
      env: scopedEnv(options.env ?? {}),
      graceMs: options.graceMs,
      provider
    })
    const scope = yield* Effect.scope

    /** Requests waiting for their reply, by id: what to do with it. */
    const pending = new Map<
      number,
      { readonly method: Method; readonly done: (reply: Exit.Exit<unknown, ProviderFailure>) => void }
    >()
    const turns = new Map<string, TurnEvents.TurnQueue>()
    let closed: ((method: Method) => ProviderFailure) | null = null
    let nextId = 1

    /** No more replies will come: fail every waiting request. */
    const close = (reason: (method: Method) => ProviderFailure) =>
      Effect.sync(() => {
        closed ??= reason
        for (const [id, entry] of pending) {
          pending.delete(id)
          entry.done(Exit.fail(reason(entry.method)))
        }
      })

    yield* Effect.addFinalizer(() => close(() => failure("error", "the provider session was closed")))

    const handleIncoming = (raw: unknown): void => {
      const decoded = Schema.decodeUnknownOption(Incoming)(raw)
      if (Option.isNone(decoded)) return proc.later(Effect.logDebug(`${provider}: ignoring an unexpected message`, raw))
      const message = decoded.value
      if ("id" in message) {
        const entry = pending.get(message.id)
        if (entry === undefined) return
        pending.delete(message.id)
        entry.done(
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
        close((method) => failure("crash", `the scripted provider process ${how} (during ${method})`))
      ),
      Effect.forkScoped
    )

    /** A reply's result, decoded. */
    const resultOf = <M extends Method>(method: M, raw: unknown): Exit.Exit<ResultOf<M>, ProviderFailure> =>
      Either.match(
        Schema.decodeUnknownEither(Methods[method].result as unknown as Schema.Schema<ResultOf<M>, unknown>)(raw),
        {
          onLeft: (error) => Exit.fail(failure("error", `unexpected reply to ${method}: ${error.message}`)),
          onRight: Exit.succeed
        }
      )

    /**
     * Sends a request now, from the calling fiber: `done` gets its reply (or the reason
     * none will come). Answers with the request's id.
     */
    const request = <M extends Method>(
      method: M,
      params: ParamsOf<M>,
      done: (reply: Exit.Exit<ResultOf<M>, ProviderFailure>) => void
    ): Effect.Effect<number, ProviderFailure> =>
      Effect.suspend(() => {
        if (closed !== null) return Effect.fail(closed(method))
        const id = nextId++
        const wire = Schema.encodeSync(Methods[method].params as unknown as Schema.Schema<ParamsOf<M>, unknown>)(params)
        pending.set(id, {
          method,
          done: (reply) => done(Exit.isSuccess(reply) ? resultOf(method, reply.value) : Exit.failCause(reply.cause))
        })
        return proc.send({ id, method, params: wire }).pipe(
          Effect.tapError(() => Effect.sync(() => pending.delete(id))),
          Effect.as(id)
        )
      })

    /** A request and its reply. */
    const call = <M extends Method>(method: M, params: ParamsOf<M>): Effect.Effect<ResultOf<M>, ProviderFailure> =>
      Effect.flatMap(Deferred.make<ResultOf<M>, ProviderFailure>(), (reply) =>
        Effect.flatMap(
          request(method, params, (exit) => Deferred.unsafeDone(reply, exit)),
          (id) => Deferred.await(reply).pipe(Effect.ensuring(Effect.sync(() => pending.delete(id))))
        )
      )

    yield* call("initialize", {}).pipe(
      Effect.timeoutFail({
        duration: INITIALIZE_TIMEOUT_MS,
        onTimeout: () =>
          failure("timeout", `the scripted provider did not answer initialize in ${INITIALIZE_TIMEOUT_MS} ms`)
      })
    )

    const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })

    const runTurn = Effect.fn("ScriptedSession.runTurn")(function* <E>(input: TurnInput, onEvents: TurnEventSink<E>) {
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
      yield* request(
        "turn/start",
        { nativeRef: input.nativeRef, message: input.message, handoff: input.handoff, workspace: input.workspace },
        (reply) => {
          unregister()
          queue.end(Exit.isSuccess(reply) ? Exit.void : reply)
        }
      ).pipe(
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
          ? call("turn/interrupt", { nativeRef: input.nativeRef }).pipe(Effect.ignore, Effect.forkIn(scope))
          : Effect.void
      )
      yield* queue.deliver(onEvents).pipe(Effect.ensuring(abandon))
    })

    return {
      pid: proc.pid,
      startThread: Effect.fn("ScriptedSession.startThread")(function* ({ model, workspace }) {
        const result = yield* call("thread/start", { workspace, model: model ?? options.model ?? null })
        return strong(result.nativeRef)
      }),
      resumeThread: Effect.fn("ScriptedSession.resumeThread")(function* (nativeRef) {
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
