/**
 * Subagents as the calling thread's tools see them, over the Orchestrator: spawning one
 * within the limits, a child's status and result, waiting for children's first runs,
 * cancelling one. Every operation is scoped to the calling thread: a thread that is not
 * its own subagent is refused with `NotASubagent`.
 */
import type { AppThread, CommandId, ProviderName, Run, RunStatus, SkeinError, ThreadId } from "@skein/domain"
import { autonomyRefusal, isTerminalRunStatus } from "@skein/domain"
import type { OrchestratorShape } from "@skein/runtime"
import { Deferred, Duration, Effect, Option } from "effect"
import { childDepth, isSubagentOf, NotASubagent, spawnRefusal, type SubagentLimitReached } from "./SubagentPolicy.js"
import type { SubagentLimits } from "./SubagentPolicy.js"

/** A child as a tool answers it: its thread, its first run, and the run's result once it has ended. */
export interface SubagentStatus {
  readonly childThreadId: string
  readonly runId: string | null
  readonly status: RunStatus | "not_started"
  /** The child's last message (a failed run: why it failed); absent until the run ends. */
  readonly result?: string
}

export type SubagentError = SkeinError | SubagentLimitReached | NotASubagent

/** The run's answer: its last assistant message, or why it did not end well. */
const resultOf = (run: Run, items: ReadonlyArray<{ readonly type: string; readonly text?: string }>) => {
  const said = items.filter((item) => item.type === "assistant_message").at(-1)?.text
  if (run.status === "completed") return said ?? ""
  const why = run.failure === null ? run.status : `${run.status}: ${run.failure.message}`
  return said === undefined ? why : `${said}\n(${why})`
}

/** The thread whose tools ask, over the Orchestrator, within its limits. */
interface Caller {
  readonly orchestrator: OrchestratorShape
  readonly threadId: ThreadId
  readonly limits: SubagentLimits
}

const firstRun = (orchestrator: OrchestratorShape, childId: ThreadId) =>
  Effect.map(orchestrator.getThread(childId, { runs: { after: 0, limit: 1 } }), (view) => ({
    thread: view.thread,
    run: view.runs[0]
  }))

const statusOf = (orchestrator: OrchestratorShape, childId: ThreadId): Effect.Effect<SubagentStatus, SkeinError> =>
  Effect.map(firstRun(orchestrator, childId), ({ run }) =>
    run === undefined
      ? { childThreadId: childId, runId: null, status: "not_started" }
      : {
          childThreadId: childId,
          runId: run.id,
          status: run.status,
          ...(isTerminalRunStatus(run.status) ? { result: resultOf(run, run.items) } : {})
        }
  )

/** The child, when it is the caller's subagent. */
const ownChild = ({ orchestrator, threadId }: Caller, childId: string): Effect.Effect<AppThread, SubagentError> =>
  Effect.flatMap(
    Effect.map(
      orchestrator.getThread(childId as ThreadId, { runs: { after: 0, limit: 1 }, items: false }),
      (v) => v.thread
    ),
    (thread) =>
      isSubagentOf(thread, threadId)
        ? Effect.succeed(thread)
        : Effect.fail(new NotASubagent({ threadId: childId, parentThreadId: threadId }))
  )

/** The caller's subagents. */
const children = ({ orchestrator, threadId }: Caller) =>
  Effect.map(orchestrator.listThreads({ parentThreadId: threadId }), (threads) =>
    threads.filter((thread) => isSubagentOf(thread, threadId))
  )

/** The caller's thread and its ancestors, nearest first, as far as the depth limit looks. */
const chain = ({ limits, orchestrator, threadId }: Caller) =>
  Effect.gen(function* () {
    const found: Array<AppThread> = []
    let next: ThreadId | null = threadId
    while (next !== null && found.length <= limits.maxDepth) {
      const thread: AppThread = (yield* orchestrator.getThread(next, { runs: { after: 0, limit: 1 }, items: false }))
        .thread
      found.push(thread)
      next = thread.lineage.parentThreadId
    }
    return found
  })

/** Resolves once the child's run `runId` has ended (at once if it has), or after `timeout`: whether it ended. */
const awaitEnd = (orchestrator: OrchestratorShape, childId: ThreadId, runId: string, timeout: Duration.Duration) =>
  Effect.scoped(
    Effect.gen(function* () {
      const ended = yield* Deferred.make<void>()
      // From the log's start: an end already written is replayed, so nothing is missed.
      yield* orchestrator.follow(childId, 0, (events) => {
        for (const { event } of events) {
          if (event._tag === "RunEnded" && event.run.id === runId) Deferred.unsafeDone(ended, Effect.void)
        }
      })
      return Option.isSome(
        yield* Effect.timeoutTo(Deferred.await(ended), {
          duration: timeout,
          onSuccess: Option.some,
          onTimeout: Option.none
        })
      )
    })
  )

/**
 * A spawn by the agent whose run is going on the caller's thread: refused when the
 * child's instance acts more freely than that run's. A host's call (no run going) is
 * not an agent's.
 */
const autonomyCheck = ({ orchestrator, threadId }: Caller, provider: string) =>
  Effect.gen(function* () {
    const view = yield* orchestrator.getThread(threadId, { runs: { limit: 1 }, items: false })
    const going = view.runs.find((run) => run.status === "running")
    if (going === undefined) return undefined
    const instances = yield* orchestrator.listProviders
    const parent = instances.find((i) => i.name === going.provider)
    const child = instances.find((i) => i.name === provider)
    // An unknown child instance is refused by the spawn itself, naming the known ones.
    if (parent === undefined || child === undefined) return undefined
    return autonomyRefusal(
      { provider: parent.name, autonomy: parent.autonomy },
      { provider: child.name, autonomy: child.autonomy }
    )
  })

const spawn = (
  caller: Caller,
  input: {
    readonly provider: string
    readonly prompt: string
    readonly title?: string | undefined
    readonly model?: string | undefined
    readonly wait?: boolean | undefined
    readonly timeoutMs?: number | undefined
    readonly requestId?: string | undefined
  }
): Effect.Effect<SubagentStatus, SubagentError> =>
  Effect.gen(function* () {
    const { orchestrator, threadId } = caller
    const depth = childDepth(yield* chain(caller))
    const statuses = yield* Effect.forEach(yield* children(caller), (child) =>
      Effect.map(firstRun(orchestrator, child.id), ({ run }) => run?.status ?? null)
    )
    const refused = spawnRefusal({ depth, children: statuses }, caller.limits)
    if (refused !== undefined) return yield* refused
    const tooFree = yield* autonomyCheck(caller, input.provider)
    if (tooFree !== undefined) return yield* tooFree
    const { run, thread } = yield* orchestrator.spawnSubagent(
      {
        parentThreadId: threadId,
        provider: input.provider as ProviderName,
        prompt: input.prompt,
        ...(input.title === undefined ? {} : { title: input.title }),
        ...(input.model === undefined ? {} : { model: input.model }),
        ...(input.requestId === undefined ? {} : { commandId: `mcp:${threadId}:${input.requestId}` as CommandId })
      },
      { createdBy: "agent" }
    )
    if (input.wait === true) {
      yield* awaitEnd(orchestrator, thread.id, run.id, Duration.millis(input.timeoutMs ?? DEFAULT_WAIT_MS))
    }
    return yield* statusOf(orchestrator, thread.id)
  })

const awaitChildren = (
  caller: Caller,
  input: {
    readonly childThreadIds?: ReadonlyArray<string> | undefined
    readonly timeoutMs: number
    readonly all?: boolean | undefined
  }
): Effect.Effect<ReadonlyArray<SubagentStatus>, SubagentError> =>
  Effect.gen(function* () {
    const { orchestrator } = caller
    const threads =
      input.childThreadIds === undefined
        ? yield* children(caller)
        : yield* Effect.forEach(input.childThreadIds, (id) => ownChild(caller, id))
    const runs = yield* Effect.forEach(threads, (thread) => firstRun(orchestrator, thread.id))
    const waits = runs.flatMap(({ run, thread }) =>
      run === undefined || isTerminalRunStatus(run.status)
        ? []
        : [awaitEnd(orchestrator, thread.id, run.id, Duration.infinity)]
    )
    const someEnded = waits.length < runs.length
    if (waits.length > 0 && (input.all === true || !someEnded)) {
      const waited: Effect.Effect<unknown, SkeinError> =
        input.all === true ? Effect.all(waits, { concurrency: "unbounded" }) : Effect.raceAll(waits)
      yield* Effect.timeoutTo(waited, {
        duration: Duration.millis(input.timeoutMs),
        onSuccess: () => true,
        onTimeout: () => false
      })
    }
    return yield* Effect.forEach(threads, (thread) => statusOf(orchestrator, thread.id))
  })

const cancel = (caller: Caller, childId: string): Effect.Effect<SubagentStatus, SubagentError> =>
  Effect.gen(function* () {
    const thread = yield* ownChild(caller, childId)
    yield* Effect.catchTag(caller.orchestrator.interruptRun({ threadId: thread.id }), "NoActiveRun", () => Effect.void)
    return yield* statusOf(caller.orchestrator, thread.id)
  })

/** The subagent operations of thread `threadId`'s tools. */
export const make = (orchestrator: OrchestratorShape, threadId: ThreadId, limits: SubagentLimits) => {
  const caller: Caller = { orchestrator, threadId, limits }
  return {
    spawn: (input: Parameters<typeof spawn>[1]) => spawn(caller, input),
    status: (childId: string) =>
      Effect.flatMap(ownChild(caller, childId), (thread) => statusOf(orchestrator, thread.id)),
    awaitChildren: (input: Parameters<typeof awaitChildren>[1]) => awaitChildren(caller, input),
    cancel: (childId: string) => cancel(caller, childId)
  }
}

/** How long `spawn_subagent {wait: true}` waits without a `timeoutMs`. */
export const DEFAULT_WAIT_MS = 120_000
