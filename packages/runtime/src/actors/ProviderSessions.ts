/**
 * Provider sessions: one live provider process per (provider instance, workspace),
 * shared by the threads that use it, opened on first use and closed after an idle
 * period. Each session owns its process in a Scope; killing a session closes that
 * scope at once (the escalation after a turn ignores an interrupt).
 *
 * A session whose process exits is dropped from the pool, so the next run opens a
 * new one and resumes its provider thread natively.
 */
import type { ProviderAdapter, ProviderName, ProviderSession, ProviderSessionHandle } from "@skein/domain"
import type { ProviderFailure } from "@skein/domain"
import { makeId, ProviderNotFound, ProviderRegistry } from "@skein/domain"
import { Context, Duration, Effect, Exit, Layer, RcMap, Scope } from "effect"
import { RuntimeConfig } from "../RuntimeConfig.js"

export interface SessionLease {
  readonly handle: ProviderSessionHandle
  readonly info: ProviderSession
  /** Native threads started or resumed in this process: no need to resume them again. */
  readonly loadedRefs: Set<string>
  /** Stop the process now; turns in flight on it fail. */
  readonly kill: Effect.Effect<void>
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
  static layer: Layer.Layer<ProviderSessions, never, ProviderRegistry | RuntimeConfig> = Layer.scoped(
    ProviderSessions,
    Effect.flatMap(RuntimeConfig, (config) => make({ idleTimeToLive: Duration.millis(config.sessionIdleMs) }))
  )
}

const keyOf = (provider: string, workspace: string | null) => `${provider}\u0000${workspace ?? ""}`

const make = (options: { readonly idleTimeToLive?: Duration.DurationInput }) =>
  Effect.gen(function* () {
    const { adapters } = yield* ProviderRegistry
    const byName = new Map(adapters.map((a) => [a.name as string, a]))
    const live = new Map<string, SessionLease>()

    const adapter = (name: string) => {
      const found = byName.get(name)
      return found
        ? Effect.succeed(found)
        : Effect.fail(new ProviderNotFound({ provider: name, available: [...byName.keys()] }))
    }

    const sessions: RcMap.RcMap<string, SessionLease, ProviderFailure | ProviderNotFound> = yield* RcMap.make({
      idleTimeToLive: options.idleTimeToLive ?? Duration.minutes(2),
      lookup: (key: string) =>
        Effect.gen(function* (): Effect.fn.Return<SessionLease, ProviderFailure | ProviderNotFound, Scope.Scope> {
          const [provider, workspaceKey] = key.split("\u0000") as [string, string]
          const workspace = workspaceKey === "" ? null : workspaceKey
          const found = yield* adapter(provider)
          // The process lives in a scope of its own, closed with the pool entry or by `kill`.
          const processScope = yield* Scope.make()
          yield* Effect.addFinalizer(() => Scope.close(processScope, Exit.void))
          const handle = yield* found.openSession({ workspace }).pipe(Scope.extend(processScope))
          const info: ProviderSession = {
            id: makeId.providerSession(),
            provider: found.name,
            pid: handle.pid,
            status: "ready",
            workspace,
            startedAt: new Date().toISOString()
          }
          const lease: SessionLease = {
            handle,
            info,
            loadedRefs: new Set(),
            // Uninterruptible: the turn it cuts short fails at once, and whoever raced the
            // kill against that turn must not cancel the kill half-way.
            kill: Effect.uninterruptible(
              Effect.suspend(() => {
                live.delete(key)
                return RcMap.invalidate(sessions, key).pipe(Effect.zipRight(Scope.close(processScope, Exit.void)))
              })
            )
          }
          live.set(key, lease)
          yield* Effect.addFinalizer(() => Effect.sync(() => live.get(key) === lease && live.delete(key)))
          // A process that exits on its own leaves the pool, so the next use opens a fresh
          // one; runs still holding it see the adapter's own crash failure first.
          // (A daemon: invalidating may close the scope this watcher lives in.)
          yield* handle.exited.pipe(
            Effect.zipRight(
              Effect.forkDaemon(
                Effect.suspend(() => {
                  if (live.get(key) !== lease) return Effect.void
                  live.delete(key)
                  return RcMap.invalidate(sessions, key)
                })
              )
            ),
            Effect.forkIn(processScope)
          )
          return lease
        })
    })

    const use: ProviderSessionsShape["use"] = (provider, workspace, f) =>
      Effect.scoped(
        RcMap.get(sessions, keyOf(provider, workspace)).pipe(
          Effect.tapError(() => RcMap.invalidate(sessions, keyOf(provider, workspace))),
          Effect.flatMap(f)
        )
      )

    return {
      adapters,
      adapter,
      use,
      list: Effect.sync(() => [...live.values()].map((l) => l.info))
    } satisfies ProviderSessionsShape
  })
