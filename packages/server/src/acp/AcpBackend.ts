/**
 * What `skein acp` asks of Skein: the Orchestrator's methods it uses, served either by
 * an embedded runtime (the Orchestrator itself) or by a running daemon through the
 * typed RPC client (`skein acp --url`).
 */
import type { StoredEvent, ThreadId } from "@skein/domain"
import type { OrchestratorShape } from "@skein/runtime"
import { Effect, Stream } from "effect"
import type { Scope } from "effect"
import type { SkeinClientShape } from "../SkeinRpcClient.js"

type Loosened<F> = F extends (...args: infer P) => Effect.Effect<infer A, unknown, infer R>
  ? (...args: P) => Effect.Effect<A, unknown, R>
  : F extends Effect.Effect<infer A, unknown, infer R>
    ? Effect.Effect<A, unknown, R>
    : never

type Used =
  | "listProviders"
  | "createThread"
  | "getThread"
  | "listThreads"
  | "startRun"
  | "interruptRun"
  | "respondApproval"
  | "forkThread"
  | "mergeBack"
  | "rollback"

export type AcpBackend = { readonly [K in Used]: Loosened<OrchestratorShape[K]> } & {
  /** The thread's events from `fromSequence` on, then live ones, to `onEvents` while the scope is open. */
  readonly follow: (
    threadId: ThreadId,
    fromSequence: number,
    onEvents: (events: ReadonlyArray<StoredEvent>) => void
  ) => Effect.Effect<void, unknown, Scope.Scope>
}

/** A running daemon's, through its RPC client. */
export const clientBackend = (client: SkeinClientShape): AcpBackend => ({
  listProviders: client.provider.list(),
  createThread: (input) => client.thread.create(input),
  getThread: (threadId, options) => client.thread.get({ threadId, ...options }),
  listThreads: (filter) => client.thread.list(filter),
  startRun: (input) => client.run.start(input),
  interruptRun: (input) => client.run.interrupt(input),
  respondApproval: (input) => client.approval.respond(input),
  forkThread: (input) => client.thread.fork(input),
  mergeBack: (input) => client.thread.mergeBack(input),
  rollback: (input) => client.thread.rollback(input),
  follow: (threadId, fromSequence, onEvents) =>
    Effect.asVoid(
      Effect.forkScoped(
        Stream.runForEach(client.thread.events({ threadId, fromSequence }), (event) =>
          Effect.sync(() => onEvents([event]))
        )
      )
    )
})
