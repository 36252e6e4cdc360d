/**
 * Provider sessions: one live provider process per (provider instance, workspace),
 * shared by the threads that use it, opened on first use and closed after an idle
 * period. Each session owns its process in a Scope; killing a session closes that
 * scope at once (the escalation after a turn ignores an interrupt, or after a
 * provider call timed out or died).
 *
 * The handle a lease gives is guarded (see ProviderGuard): every call ends in a typed
 * failure naming its method, within its deadline. Opening is guarded the same way; a
 * failed open leaves nothing behind, so the next use tries again. A session whose
 * process exits is dropped from the pool, so the next run opens a new one and
 * resumes its provider thread natively. The credentials for Skein's tools a session's
 * agents were given are revoked when it closes.
 */
import type { AgentTools, ProviderAdapter, ProviderName, ProviderSession, ThreadId } from "@skein/domain"
import type { ProviderFailure } from "@skein/domain"
import { makeId, ProviderNotFound, ProviderRegistry } from "@skein/domain"
import { Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import { RuntimeConfig } from "../RuntimeConfig.js"
import type { GuardedSession, ProviderDeadlines } from "./ProviderGuard.js"
import { guardCall, guardSession } from "./ProviderGuard.js"
import * as RcRegistry from "../resources/RcRegistry.js"
import { ToolCredentials } from "../resources/ToolCredentials.js"

export interface SessionLease {
  /** The guarded handle: typed failures only, each call within its deadline. */
  readonly handle: GuardedSession
  readonly info: ProviderSession
  /** Native threads started or resumed in this process: no need to resume them again. */
  readonly loadedRefs: Set<string>
  /** Stop the process now; turns in flight on it fail. */
  readonly kill: Effect.Effect<void>
  /** Skein's tools for this session's agent on `threadId` (revoked when the session ends), or undefined: none served. */
  readonly tools: (threadId: ThreadId) => AgentTools | undefined
}

export interface ProviderSessionsShape {
  readonly adapters: ReadonlyArray<ProviderAdapter>
  readonly adapter: (name: string) => Effect.Effect<ProviderAdapter, ProviderNotFound>
  /** Run `f` with a live session, opening one if needed. The session stays open while `f` runs. */
  readonly use: <A, E, R>(
    provider: ProviderName,
    workspace: string | null,
    f: (lease: SessionLease) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | ProviderFailure | ProviderNotFound, R>
  readonly list: Effect.Effect<ReadonlyArray<ProviderSession>>
}

export class ProviderSessions extends Context.Tag("@skein/runtime/ProviderSessions")<
  ProviderSessions,
  ProviderSessionsShape
>() {
  static layer: Layer.Layer<ProviderSessions, never, ProviderRegistry | RuntimeConfig | ToolCredentials> = Layer.scoped(
    ProviderSessions,
    Effect.flatMap(RuntimeConfig, (config) =>
      make({ idleTimeToLive: Duration.millis(config.sessionIdleMs), deadlines: config.deadlines })
    )
  )
}

interface Key {
  readonly provider: string
  readonly workspace: string | null
}

const keyOf = (provider: string, workspace: string | null) => `${provider}\u0000${workspace ?? ""}`
const parseKey = (key: string): Key => {
  const [provider, workspace] = key.split("\u0000") as [string, string]
  return { provider, workspace: workspace === "" ? null : workspace }
}

const make = (options: { readonly idleTimeToLive: Duration.DurationInput; readonly deadlines: ProviderDeadlines }) =>
  Effect.gen(function* () {
    const { adapters } = yield* ProviderRegistry
    const credentials = yield* ToolCredentials
    const byName = new Map(adapters.map((a) => [a.name as string, a]))
    const live = new Map<string, SessionLease>()

    const adapter = Effect.fnUntraced(function* (name: string) {
      const found = byName.get(name)
      if (found === undefined) return yield* new ProviderNotFound({ provider: name, available: [...byName.keys()] })
      return found
    })

    // Set right below: a lease's kill and its exit watcher drop it from the pool.
    // eslint-disable-next-line prefer-const
    let sessions: RcRegistry.RcRegistry<string, SessionLease, ProviderFailure | ProviderNotFound>

    const open: (key: string) => Effect.Effect<SessionLease, ProviderFailure | ProviderNotFound, Scope.Scope> =
      Effect.fn("ProviderSessions.open")(function* (key: string) {
        const { provider, workspace } = parseKey(key)
        const found = yield* adapter(provider)
        // The process lives in a scope of its own, closed with the pool entry or by `kill`.
        const processScope = yield* Scope.make()
        yield* Effect.addFinalizer(() => Scope.close(processScope, Exit.void))
        const raw = yield* guardCall(provider, "openSession", options.deadlines.openMs, () =>
          found.openSession({ workspace }).pipe(Scope.extend(processScope))
        )
        const handle = guardSession(provider, raw, options.deadlines)
        const info: ProviderSession = {
          id: makeId.providerSession(),
          provider: found.name,
          pid: raw.pid,
          status: "ready",
          workspace,
          startedAt: new Date().toISOString()
        }
        const drop = Effect.suspend(() => {
          if (live.get(key) !== lease) return Effect.void
          live.delete(key)
          return sessions.invalidate(key)
        })
        // Credentials handed to this session's agents go with it.
        yield* Effect.addFinalizer(() => credentials.endSession(info.id))
        const lease: SessionLease = {
          handle,
          info,
          loadedRefs: new Set(),
          tools: (threadId) => credentials.forSession(info.id, threadId),
          // Uninterruptible: the turn it cuts short fails at once, and whoever raced the
          // kill against that turn must not cancel the kill half-way.
          kill: Effect.uninterruptible(Effect.zipRight(drop, Scope.close(processScope, Exit.void)))
        }
        live.set(key, lease)
        yield* Effect.addFinalizer(() => Effect.sync(() => live.get(key) === lease && live.delete(key)))
        // A process that exits on its own leaves the pool, so the next use opens a fresh
        // one; runs still holding it see their calls fail as a crash first.
        // (A daemon: dropping may close the scope this watcher lives in.)
        yield* handle.exited.pipe(Effect.zipRight(Effect.forkDaemon(drop)), Effect.forkIn(processScope))
        return lease
      })

    sessions = yield* RcRegistry.make({ lookup: open, idleTimeToLive: options.idleTimeToLive })

    const use: ProviderSessionsShape["use"] = (provider, workspace, f) => sessions.use(keyOf(provider, workspace), f)

    return {
      adapters,
      adapter,
      use,
      list: Effect.withSpan(
        Effect.sync(() => [...live.values()].map((l) => l.info)),
        "ProviderSessions.list"
      )
    } satisfies ProviderSessionsShape
  })
