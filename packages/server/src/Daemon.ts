/**
 * The standalone daemon: the runtime on a SQLite file or a PostgreSQL database (alone,
 * or as one runner of a cluster), served over WebSocket until the scope closes (the CLI
 * closes it on SIGTERM/SIGINT). Closing stops accepting connections, shuts the
 * Orchestrator down (running runs end `interrupted`), then releases the runtime.
 *
 * Every daemon has a token: the one given (`--token`), else the one in
 * `DATA_DIR/token`, created on first start (see `TokenFile`). OpenTelemetry is on when
 * the standard variables name an endpoint (see `Telemetry`).
 */
import * as Path from "node:path"
import * as Fs from "node:fs"
import { type ClusterOptions, Database, Orchestrator } from "@skein/runtime"
import { Context, Effect, Layer } from "effect"
import { checkBind, checkToken } from "./Auth.js"
import { defaultDataDir, ensureDataDir } from "./DataDir.js"
import { skeinRuntimeLayer } from "./SkeinRuntime.js"
import { telemetryFromEnv } from "./Telemetry.js"
import { loadOrCreateToken } from "./TokenFile.js"
import { DEFAULT_HOST, type RunningServer, serveWebSocket, type WebSocketServerOptions } from "./WebSocketServer.js"

export interface DaemonOptions extends WebSocketServerOptions {
  readonly dbPath?: string | undefined
  /** This daemon as one runner of a cluster on its PostgreSQL database. */
  readonly cluster?: ClusterOptions | undefined
  readonly dataDir?: string | undefined
  readonly configFile?: string | undefined
}

export { defaultDataDir }

export const resolvePaths = (options: DaemonOptions): { readonly dataDir: string; readonly dbPath: string } => {
  const dataDir = Path.resolve(options.dataDir ?? defaultDataDir())
  const dbPath = options.dbPath ?? Path.join(dataDir, "skein.db")
  return { dataDir, dbPath: Database.isUrl(dbPath) ? dbPath : Path.resolve(dbPath) }
}

/**
 * Starts the runtime and the server in the current scope and returns once the
 * server accepts connections.
 */
export const startDaemon = Effect.fn("Server.startDaemon")(function* (options: DaemonOptions = {}) {
  // OpenTelemetry, when the environment names an endpoint: installed first, so that the
  // runtime and the server run under it, and closed last, so that it flushes their spans.
  return yield* Effect.provide(start(options), yield* Layer.toRuntime(telemetryFromEnv()))
})

const start = Effect.fnUntraced(function* (options: DaemonOptions) {
  yield* checkBind(options.host ?? DEFAULT_HOST, options.token)
  const { dataDir, dbPath } = resolvePaths(options)
  // Whoever may write here could replace the token or the database: refused first.
  yield* ensureDataDir(dataDir)
  const access =
    options.token === undefined
      ? yield* loadOrCreateToken(dataDir)
      : { token: yield* checkToken(options.token, options.tokenSource ?? "--token"), path: undefined }
  if (!Database.isUrl(dbPath)) yield* Effect.sync(() => Fs.mkdirSync(Path.dirname(dbPath), { recursive: true }))
  const runtime = yield* Layer.build(
    skeinRuntimeLayer({ dbPath, dataDir, configFile: options.configFile, cluster: options.cluster })
  )
  const orchestrator = Context.get(runtime, Orchestrator)
  // Runs after the server has stopped accepting (finalizers run in reverse order).
  yield* Effect.addFinalizer(() => orchestrator.shutdown)
  const running: RunningServer = yield* serveWebSocket({ ...options, token: access.token }).pipe(
    Effect.provide(runtime)
  )
  /** `tokenFile`: where clients find the token, unless it was given. */
  return {
    ...running,
    dbPath: Database.isUrl(dbPath) ? Database.redact(dbPath) : dbPath,
    dataDir,
    tokenFile: access.path
  }
})

export type StartedDaemon = Effect.Effect.Success<ReturnType<typeof startDaemon>>
export type DaemonError = Effect.Effect.Error<ReturnType<typeof startDaemon>>
