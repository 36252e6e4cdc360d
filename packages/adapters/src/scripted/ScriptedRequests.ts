/**
 * Requests to the scripted provider process, correlated with their replies by id: a
 * reply's result is decoded by its method's schema (Protocol.ts), an error reply fails
 * with the kind the provider gave, and once the conversation ends every waiting request
 * and every later one fails with the reason.
 */
import type { ProviderFailure } from "@skein/domain"
import type { Failure } from "../agents/AgentOptions.js"
import { Deferred, Effect, Either, Exit, Schema } from "effect"
import type { LineProcess } from "../process/LineProcess.js"
import type { Method, ParamsOf, ResultOf } from "./Protocol.js"
import { Methods } from "./Protocol.js"

export interface ScriptedRequests {
  /**
   * Sends a request now, from the calling fiber: `done` gets its reply (or the reason
   * none will come). Answers with the request's id.
   */
  readonly request: <M extends Method>(
    method: M,
    params: ParamsOf<M>,
    done: (reply: Exit.Exit<ResultOf<M>, ProviderFailure>) => void
  ) => Effect.Effect<number, ProviderFailure>
  /** A request and its reply. */
  readonly call: <M extends Method>(method: M, params: ParamsOf<M>) => Effect.Effect<ResultOf<M>, ProviderFailure>
  /** Hands over a reply read (not decoded); a reply to no waiting request is dropped. */
  readonly reply: (id: number, outcome: Exit.Exit<unknown, ProviderFailure>) => void
  /** No more replies will come: fails every waiting request and every later one. */
  readonly close: (reason: (method: Method) => ProviderFailure) => Effect.Effect<void>
}

export const makeScriptedRequests = (proc: LineProcess, failure: Failure): ScriptedRequests => {
  /** Requests waiting for their reply, by id: what to do with it. */
  const pending = new Map<
    number,
    { readonly method: Method; readonly done: (reply: Exit.Exit<unknown, ProviderFailure>) => void }
  >()
  let closed: ((method: Method) => ProviderFailure) | null = null
  let nextId = 1

  /** A reply's result, decoded. */
  const resultOf = <M extends Method>(method: M, raw: unknown): Exit.Exit<ResultOf<M>, ProviderFailure> =>
    Either.match(
      Schema.decodeUnknownEither(Methods[method].result as unknown as Schema.Schema<ResultOf<M>, unknown>)(raw),
      {
        onLeft: (error) => Exit.fail(failure("error", `unexpected reply to ${method}: ${error.message}`)),
        onRight: Exit.succeed
      }
    )

  const request: ScriptedRequests["request"] = (method, params, done) =>
    Effect.suspend(() => {
      if (closed !== null) return Effect.fail(closed(method))
      const id = nextId++
      const wire = Schema.encodeSync(Methods[method].params as unknown as Schema.Schema<typeof params, unknown>)(params)
      pending.set(id, {
        method,
        done: (reply) => done(Exit.isSuccess(reply) ? resultOf(method, reply.value) : Exit.failCause(reply.cause))
      })
      return proc.send({ id, method, params: wire }).pipe(
        Effect.tapError(() => Effect.sync(() => pending.delete(id))),
        Effect.as(id)
      )
    })

  const call: ScriptedRequests["call"] = (method, params) =>
    Effect.flatMap(Deferred.make<ResultOf<typeof method>, ProviderFailure>(), (reply) =>
      Effect.flatMap(
        request(method, params, (exit) => Deferred.unsafeDone(reply, exit)),
        (id) => Deferred.await(reply).pipe(Effect.ensuring(Effect.sync(() => pending.delete(id))))
      )
    )

  return {
    request,
    call,
    reply: (id, outcome) => {
      const entry = pending.get(id)
      if (entry === undefined) return
      pending.delete(id)
      entry.done(outcome)
    },
    close: (reason) =>
      Effect.sync(() => {
        closed ??= reason
        for (const [id, entry] of pending) {
          pending.delete(id)
          entry.done(Exit.fail(reason(entry.method)))
        }
      })
  }
}
