/**
 * Test harness: the real runtime (actors, SQLite, scripted provider processes) in a
 * temporary directory. Only the transport is missing: tests call the Orchestrator.
 */
import { providerRegistryLayer } from "@skein/adapters"
import type { RuntimeOverrides } from "@skein/runtime"
import type { ProviderAdapter, ProviderSessionHandle } from "@skein/domain"
import { ProviderRegistry } from "@skein/domain"
import { Database, EventStore, makeRuntimeLayer, Orchestrator, ThreadActors } from "@skein/runtime"
import { Effect, Layer, Logger, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export const tempDir = (prefix = "skein-test-"): string => mkdtempSync(join(tmpdir(), prefix))

export const removeDir = (dir: string): void => rmSync(dir, { recursive: true, force: true })

/** Every log line, with its cause, as text; `layer` puts the logger in place. */
export const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ cause, logLevel, message }) => {
    lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)} ${String(cause)}`)
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/**
 * For `mapAdapter`: the instance named `name` with each session's `runTurn` replaced by
 * `wrap(runTurn)` (to observe or alter a turn); every other instance as it is.
 */
export const wrapTurns =
  (name: string, wrap: (runTurn: ProviderSessionHandle["runTurn"]) => ProviderSessionHandle["runTurn"]) =>
  (adapter: ProviderAdapter): ProviderAdapter =>
    adapter.name !== name
      ? adapter
      : {
          ...adapter,
          openSession: (options) =>
            Effect.map(adapter.openSession(options), (handle) => ({ ...handle, runTurn: wrap(handle.runTurn) }))
        }

/** The runtime over a database file in `dir`, with providers from `configFile` or the defaults (alpha, beta). */
export const runtimeLayer = (
  dir: string,
  options: RuntimeOverrides & {
    readonly configFile?: string
    readonly dbName?: string
    /** The database instead of a file in `dir`: a `postgresql://` URL (test/support/postgres.ts). */
    readonly store?: string
    /** Wrap the configured adapters (to observe them, or to make one misbehave). */
    readonly mapAdapter?: (adapter: ProviderAdapter) => ProviderAdapter
    /** Instances beside the configured ones (test-only adapters). */
    readonly extraAdapters?: ReadonlyArray<ProviderAdapter>
  } = {}
) => {
  const { configFile, dbName, extraAdapters, mapAdapter, store, ...tunables } = options
  const registry = providerRegistryLayer({ configFile, dataDir: dir })
  return makeRuntimeLayer({ dbPath: store ?? join(dir, dbName ?? "skein.db"), ...tunables }).pipe(
    Layer.provide(
      mapAdapter || extraAdapters
        ? Layer.effect(
            ProviderRegistry,
            Effect.map(ProviderRegistry, (r) => ({
              adapters: [...r.adapters.map(mapAdapter ?? ((a) => a)), ...(extraAdapters ?? [])]
            }))
          ).pipe(Layer.provide(registry))
        : registry
    ),
    Layer.orDie
  )
}

/**
 * The store (and the configured providers) beside a runtime on the same database file in
 * `dir`: reads while the runtime runs, or a second writer. Dispose of it when done.
 */
export const storeOn = (
  dir: string,
  store?: string
): ManagedRuntime.ManagedRuntime<EventStore | ProviderRegistry, unknown> =>
  ManagedRuntime.make(
    Layer.mergeAll(EventStore.layer, providerRegistryLayer({ dataDir: dir })).pipe(
      Layer.provide(Database.layer({ filename: store ?? join(dir, "skein.db") }))
    )
  )

/** Run a program against a fresh runtime in `dir`; the runtime closes (and its sessions stop) afterwards. */
export const withRuntime = <A, E>(
  dir: string,
  program: (orchestrator: Orchestrator["Type"], actors: ThreadActors["Type"]) => Effect.Effect<A, E>,
  options: Parameters<typeof runtimeLayer>[1] = {}
): Promise<A> =>
  Effect.runPromise(
    Effect.flatMap(Effect.all([Orchestrator, ThreadActors]), ([o, a]) => program(o, a)).pipe(
      Effect.provide(runtimeLayer(dir, options))
    ) as Effect.Effect<A, E>
  )

/** Whether a process with this pid is alive. */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Poll `check` every 20 ms until it holds or `timeoutMs` passes. */
export const waitFor = async (check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return check()
}

type RuntimeProgram<A, E> = (
  orchestrator: Orchestrator["Type"],
  actors: ThreadActors["Type"],
  dir: string
) => Effect.Effect<A, E>

/** `withRuntime` in a fresh temporary directory that is removed afterwards. */
export const inTempRuntime = async <A, E>(
  program: RuntimeProgram<A, E>,
  options: Parameters<typeof runtimeLayer>[1] | ((dir: string) => Parameters<typeof runtimeLayer>[1]) = {}
): Promise<A> => {
  const dir = tempDir()
  try {
    return await withRuntime(dir, (o, a) => program(o, a, dir), typeof options === "function" ? options(dir) : options)
  } finally {
    removeDir(dir)
  }
}
