/**
 * The standalone daemon: the runtime on a SQLite file, served over WebSocket until
 * the scope closes (the CLI closes it on SIGTERM/SIGINT). Closing stops accepting
 * connections, shuts the Orchestrator down (running runs end `interrupted`), then
 * releases the runtime.
 */
import * as Os from "node:os"
import * as Path from "node:path"
import * as Fs from "node:fs"
import { Orchestrator } from "@skein/runtime"
import { Context, Effect, Layer } from "effect"
import { checkBind } from "./Auth.js"
import { skeinRuntimeLayer } from "./SkeinRuntime.js"
import { type RunningServer, serveWebSocket, type WebSocketServerOptions } from "./WebSocketServer.js"

export interface DaemonOptions extends WebSocketServerOptions {
  readonly dbPath?: string | undefined
  readonly dataDir?: string | undefined
  readonly configFile?: string | undefined
}

/** `$SKEIN_HOME`, else `~/.skein`. */
export const defaultDataDir = (env: Readonly<Record<string, string | undefined>> = process.env): string =>
  env["SKEIN_HOME"] !== undefined && env["SKEIN_HOME"] !== "" ? env["SKEIN_HOME"] : Path.join(Os.homedir(), ".skein")

export const resolvePaths = (options: DaemonOptions): { readonly dataDir: string; readonly dbPath: string } => {
  const dataDir = Path.resolve(options.dataDir ?? defaultDataDir())
  return { dataDir, dbPath: Path.resolve(options.dbPath ?? Path.join(dataDir, "skein.db")) }
}

/**
 * Starts the runtime and the server in the current scope and returns once the
 * server accepts connections.
 */
export const startDaemon = (options: DaemonOptions = {}) =>
  Effect.gen(function* () {
    yield* checkBind(options.host ?? "127.0.0.1", options.token)
    const { dataDir, dbPath } = resolvePaths(options)
    yield* Effect.sync(() => {
      Fs.mkdirSync(dataDir, { recursive: true })
      Fs.mkdirSync(Path.dirname(dbPath), { recursive: true })
    })
    const runtime = yield* Layer.build(skeinRuntimeLayer({ dbPath, dataDir, configFile: options.configFile }))
    const orchestrator = Context.get(runtime, Orchestrator)
    // Runs after the server has stopped accepting (finalizers run in reverse order).
    yield* Effect.addFinalizer(() => orchestrator.shutdown)
    const running: RunningServer = yield* serveWebSocket(options).pipe(Effect.provide(runtime))
    return { ...running, dbPath, dataDir }
  })

export type StartedDaemon = Effect.Effect.Success<ReturnType<typeof startDaemon>>
export type DaemonError = Effect.Effect.Error<ReturnType<typeof startDaemon>>
