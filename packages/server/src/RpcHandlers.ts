/**
 * The RPC handlers: each method of `SkeinRpcs` maps one to one onto the Orchestrator,
 * each request-response method in a span named for it (`Server.run.start`). Payloads
 * arrive decoded (the guarded protocol turns undecodable ones into `InvalidInput`
 * before they get here).
 */
import { SkeinRpcs } from "@skein/domain"
import { Orchestrator } from "@skein/runtime"
import { Effect } from "effect"

/** Drops keys whose value is `undefined` (exactOptionalPropertyTypes). */
const defined = <A extends object>(input: A): { [K in keyof A]: Exclude<A[K], undefined> } =>
  Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as never

export const SkeinRpcHandlers = SkeinRpcs.toLayer(
  Effect.gen(function* () {
    const orchestrator = yield* Orchestrator
    return SkeinRpcs.of({
      "thread.create": Effect.fn("Server.thread.create")((payload) => orchestrator.createThread(payload)),
      "thread.get": ({ threadId, ...options }) => orchestrator.getThread(threadId, defined(options)),
      "thread.list": Effect.fn("Server.thread.list")((payload) => orchestrator.listThreads(defined(payload))),
      // Skein's own transports serve thread.events in the guarded protocol (a callback
      // per follower); this stream serves it for any other protocol a host runs these on.
      "thread.events": ({ fromSequence, threadId }) => orchestrator.events(threadId, fromSequence),
      "run.start": (payload) => orchestrator.startRun(payload),
      "run.interrupt": (payload) => orchestrator.interruptRun(payload),
      "thread.fork": Effect.fn("Server.thread.fork")((payload) => orchestrator.forkThread(payload)),
      "thread.mergeBack": Effect.fn("Server.thread.mergeBack")((payload) => orchestrator.mergeBack(payload)),
      "thread.rollback": Effect.fn("Server.thread.rollback")((payload) => orchestrator.rollback(payload)),
      "subagent.spawn": Effect.fn("Server.subagent.spawn")((payload) => orchestrator.spawnSubagent(payload)),
      "transfer.list": (payload) => orchestrator.listTransfers(defined(payload)),
      "handoff.get": ({ handoffId }) => orchestrator.getHandoff(handoffId),
      "approval.respond": (payload) => orchestrator.respondApproval(payload),
      "provider.list": Effect.fn("Server.provider.list")(() => orchestrator.listProviders),
      "thread.locate": ({ threadId }) => orchestrator.locateThread(threadId),
      "thread.toolCredential": Effect.fn("Server.thread.toolCredential")(({ threadId }) =>
        Effect.map(orchestrator.toolCredentials.issue(threadId), (token) => ({
          url: orchestrator.toolCredentials.endpoint(),
          token
        }))
      )
    })
  })
)
