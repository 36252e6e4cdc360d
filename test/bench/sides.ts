/**
 * The two sides of a side-by-side bench: this checkout and a baseline checkout built
 * beside it (scripts/ab-baseline.sh), loaded into one process. Each side is a checkout's
 * public modules, loaded from its own files with its own node_modules (so its own copy
 * of Effect); a side is driven only through what every revision exports (the
 * Orchestrator's layer, the providers' registry, the server's WebSocket RPC), never
 * through internals, which differ between the two.
 */
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import type { ProviderAdapter, ProviderEvent, TurnInput } from "@skein/domain"

type EffectIndex = typeof import("effect")
type DomainIndex = typeof import("@skein/domain")
type RuntimeIndex = typeof import("@skein/runtime")
type AdaptersIndex = typeof import("@skein/adapters")
type ServerIndex = typeof import("@skein/server")

/** One checkout's modules (the baseline's typed as this checkout's: their public shapes are the same). */
export interface Side {
  /** "before" (the baseline) or "after" (this checkout). */
  readonly label: string
  readonly E: EffectIndex
  readonly domain: DomainIndex
  readonly runtime: RuntimeIndex
  readonly adapters: AdaptersIndex
  readonly server: ServerIndex
}

/** This checkout's modules (`root` null) or those of the checkout at `root`. */
export const loadSide = async (label: string, root: string | null): Promise<Side> => {
  const load = <A>(relative: string, own: () => Promise<A>): Promise<A> =>
    root === null ? own() : (import(pathToFileURL(Path.join(root, relative)).href) as Promise<A>)
  return {
    label,
    E: await load<EffectIndex>("node_modules/effect/dist/esm/index.js", () => import("effect")),
    domain: await load<DomainIndex>("packages/domain/dist/src/index.js", () => import("@skein/domain")),
    runtime: await load<RuntimeIndex>("packages/runtime/dist/src/index.js", () => import("@skein/runtime")),
    adapters: await load<AdaptersIndex>("packages/adapters/dist/src/index.js", () => import("@skein/adapters")),
    server: await load<ServerIndex>("packages/server/dist/src/index.js", () => import("@skein/server"))
  }
}

/** The event that ends a turn at the provider port. */
export const isTurnEnd = (event: ProviderEvent): boolean =>
  event._tag === "TurnCompleted" || event._tag === "TurnInterrupted"

/**
 * `adapter` with every turn watched: `watch(input, events, startedAt)` sees each batch of
 * events its sessions hand the runtime, `startedAt` being when the turn's call began
 * (performance.now()).
 */
export const watchTurns =
  (side: Side, watch: (input: TurnInput, events: ReadonlyArray<ProviderEvent>, startedAt: number) => void) =>
  (adapter: ProviderAdapter): ProviderAdapter => {
    const { Effect } = side.E
    return {
      ...adapter,
      openSession: (options) =>
        Effect.map(adapter.openSession(options), (handle) => ({
          ...handle,
          runTurn: (input, onEvents) =>
            Effect.suspend(() => {
              const startedAt = performance.now()
              return handle.runTurn(input, (events) => {
                watch(input, events, startedAt)
                return onEvents(events)
              })
            })
        }))
    }
  }

/** A side's runtime (Orchestrator and ThreadActors over a database in `dir`), its providers from `configFile` (else alpha and beta, scripted), each adapter passed through `mapAdapter`. */
export const openRuntime = (
  side: Side,
  dir: string,
  options: { readonly configFile?: string; readonly mapAdapter: (adapter: ProviderAdapter) => ProviderAdapter }
) => {
  const { Effect, Layer, ManagedRuntime } = side.E
  const { ProviderRegistry } = side.domain
  const registry = Layer.effect(
    ProviderRegistry,
    Effect.map(ProviderRegistry, (r) => ({ ...r, adapters: r.adapters.map(options.mapAdapter) }))
  ).pipe(Layer.provide(side.adapters.providerRegistryLayer({ configFile: options.configFile, dataDir: dir })))
  const layer = side.runtime
    .makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db"), passivateAfterMs: 600_000 })
    .pipe(Layer.provide(registry), Layer.orDie)
  return ManagedRuntime.make(layer)
}

/**
 * `count` scaled by SKEIN_BENCH_SIDE_SCALE (default 1; e.g. 0.1 for a quick try that
 * checks the bench runs, whose figures then mean little), at least `least`.
 */
export const scaled = (count: number, least = 1): number => {
  const scale = Number(process.env.SKEIN_BENCH_SIDE_SCALE ?? 1)
  if (!(scale > 0))
    throw new Error(`SKEIN_BENCH_SIDE_SCALE must be a number above 0, not ${process.env.SKEIN_BENCH_SIDE_SCALE}`)
  return Math.max(least, Math.round(count * scale))
}

/** Runs `body` once per side, in the given order (which side goes first alternating with `i`). */
export const inTurn = async <A>(
  sides: readonly [Side, Side],
  i: number,
  body: (side: Side, index: 0 | 1) => Promise<A>
): Promise<[A, A]> => {
  const results: Array<A> = []
  const order: ReadonlyArray<0 | 1> = i % 2 === 0 ? [0, 1] : [1, 0]
  for (const index of order) results[index] = await body(sides[index], index)
  return [results[0]!, results[1]!]
}
