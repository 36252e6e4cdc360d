/**
 * The runtime with its provider registry, wired the way the daemon, the demo and an
 * embedding host use it: SQLite at `dbPath`, providers from `configFile` (default:
 * the scripted instances alpha and beta), provider data under `dataDir`.
 */
import { providerRegistryLayer } from "@skein/adapters"
import type { InvalidInput, StorageError } from "@skein/domain"
import { makeRuntimeLayer, type Orchestrator } from "@skein/runtime"
import { Layer } from "effect"

export interface SkeinRuntimeOptions {
  readonly dbPath: string
  readonly dataDir: string
  readonly configFile?: string | undefined
  readonly passivateAfterMs?: number | undefined
}

export const skeinRuntimeLayer = (
  options: SkeinRuntimeOptions
): Layer.Layer<Orchestrator, StorageError | InvalidInput> =>
  makeRuntimeLayer({
    dbPath: options.dbPath,
    ...(options.passivateAfterMs === undefined ? {} : { passivateAfterMs: options.passivateAfterMs })
  }).pipe(Layer.provide(providerRegistryLayer({ configFile: options.configFile, dataDir: options.dataDir })))
