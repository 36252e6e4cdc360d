/**
 * The runtime with its provider registry, wired the way the daemon, the demo and an
 * embedding host use it: the database at `dbPath` (a SQLite file or a `postgresql://`
 * URL), providers from `configFile` (default: the scripted instances alpha and beta),
 * provider data under `dataDir`, alone or as a runner of a cluster. A runtime with no
 * provider instance could run nothing: it refuses to start.
 */
import { loadConfigOrDefaults, registryLayerOf } from "@skein/adapters"
import type { DatabaseInUse, InvalidInput, StorageError } from "@skein/domain"
import { type ClusterOptions, makeRuntimeLayer, Orchestrator } from "@skein/runtime"
import { Context, Effect, Layer, Schema } from "effect"

export interface SkeinRuntimeOptions {
  readonly dbPath: string
  readonly dataDir: string
  readonly configFile?: string | undefined
  readonly passivateAfterMs?: number | undefined
  /** This process as one runner of a cluster on the PostgreSQL database `dbPath` names. */
  readonly cluster?: ClusterOptions | undefined
}

export class NoProviders extends Schema.TaggedError<NoProviders>()("NoProviders", {
  configFile: Schema.optional(Schema.String)
}) {
  override get message() {
    return `${this.configFile === undefined ? "The provider configuration" : `The config file ${this.configFile}`} names no provider instance, so no run could start. Add one under "providers", e.g. {"providers": {"alpha": {"driver": "scripted"}}}.`
  }
}

export const skeinRuntimeLayer = (
  options: SkeinRuntimeOptions
): Layer.Layer<Orchestrator, StorageError | InvalidInput | DatabaseInUse | NoProviders> =>
  Layer.unwrapEffect(
    Effect.map(loadConfigOrDefaults(options.configFile), (config) =>
      makeRuntimeLayer({
        dbPath: options.dbPath,
        cluster: options.cluster,
        workspaceRoots: config.workspaceRoots ?? null,
        ...(config.checkpoints === undefined ? {} : { checkpoints: config.checkpoints }),
        ...(options.passivateAfterMs === undefined ? {} : { passivateAfterMs: options.passivateAfterMs })
      }).pipe(Layer.provide(registryLayerOf(config, { dataDir: options.dataDir })))
    )
  ).pipe(
    Layer.tap((context) =>
      Effect.flatMap(Effect.orDie(Context.get(context, Orchestrator).listProviders), (providers) =>
        providers.length > 0
          ? Effect.void
          : Effect.fail(new NoProviders(options.configFile === undefined ? {} : { configFile: options.configFile }))
      )
    )
  )
