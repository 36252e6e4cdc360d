/**
 * What `daemon`, `stdio`, `acp` and `demo` do (declared in `Cli.ts`, which imports this module
 * when one of them runs): the commands that run Skein itself, with the runtime, the
 * adapters and SQLite.
 */
import { stdin } from "@effect/platform-node/NodeStream"
import { InvalidInput } from "@skein/domain"
import { type ClusterOptions, Database } from "@skein/runtime"
import * as Net from "node:net"
import { Console, Effect, Option } from "effect"
import { reportFailures } from "./CliFailures.js"
import { resolvePaths, startDaemon } from "./Daemon.js"
import { ensureDataDir } from "./DataDir.js"
import { runDemo } from "./Demo.js"
import { normaliseAllowedHost, normaliseOrigin } from "./Handshake.js"
import { type LogFormat, loggerLayer } from "./LogFormat.js"
import { skeinRuntimeLayer } from "./SkeinRuntime.js"
import { serveStdio } from "./Stdio.js"
import { withTelemetryFromEnv } from "./Telemetry.js"
import { clientBackend } from "./acp/AcpBackend.js"
import { serveAcpStdio, serveAcpWith } from "./acp/AcpStdio.js"
import { makeSkeinClient } from "./Client.js"

interface Paths {
  readonly db: Option.Option<string>
  readonly store: Option.Option<string>
  readonly config: Option.Option<string>
  readonly dataDir: Option.Option<string>
}

/**
 * The database the options name: the SQLite file of `--db`, the PostgreSQL database of
 * `--store`, or neither (the data directory's file); both, or a `--store` that is not a
 * `postgresql://` URL, refused before anything is opened.
 */
const databaseOf = (o: Paths): Effect.Effect<string | undefined, InvalidInput> => {
  if (Option.isSome(o.db) && Option.isSome(o.store)) {
    return Effect.fail(
      new InvalidInput({ detail: "give --db (a SQLite file) or --store (a postgresql:// URL), not both" })
    )
  }
  if (Option.isSome(o.store) && !Database.isUrl(o.store.value)) {
    return Effect.fail(
      new InvalidInput({
        // The value is not repeated: it may hold a password.
        detail: "--store takes a postgresql://user:password@host:port/database URL; a SQLite file goes to --db"
      })
    )
  }
  return Effect.succeed(Option.getOrUndefined(Option.orElse(o.store, () => o.db)))
}

/**
 * `--cluster`: this daemon as a runner, reached by the others at `--runner-host` and
 * `--runner-port` (a free port when not given); it needs a PostgreSQL `--store`.
 */
const clusterOf = (
  o: {
    readonly cluster: boolean
    readonly runnerHost: string
    readonly runnerPort: Option.Option<number>
    readonly leaseMs: Option.Option<number>
  },
  database: string | undefined
): Effect.Effect<ClusterOptions | undefined, InvalidInput> =>
  Effect.gen(function* () {
    if (!o.cluster) {
      if (Option.isSome(o.runnerPort) || Option.isSome(o.leaseMs)) {
        return yield* new InvalidInput({ detail: "--runner-port and --lease-ms go with --cluster" })
      }
      return undefined
    }
    if (database === undefined || !Database.isUrl(database)) {
      return yield* new InvalidInput({
        detail: "--cluster needs the PostgreSQL database the runners share: --store postgresql://… (or SKEIN_STORE)"
      })
    }
    const lease = Option.getOrUndefined(o.leaseMs)
    if (lease !== undefined && !(lease >= 1000 && lease <= 600_000)) {
      return yield* new InvalidInput({ detail: `--lease-ms must be between 1000 and 600000, not ${lease}` })
    }
    const port = Option.getOrUndefined(o.runnerPort)
    if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65535)) {
      return yield* new InvalidInput({ detail: `--runner-port must be a port number (1-65535), not ${port}` })
    }
    return {
      host: o.runnerHost,
      port: port ?? (yield* freePort(o.runnerHost)),
      leaseMs: lease
    }
  })

/** A port nothing listens on at `host` right now. */
const freePort = (host: string): Effect.Effect<number, InvalidInput> =>
  Effect.async((resume) => {
    const server = Net.createServer()
    server.once("error", (error) =>
      resume(Effect.fail(new InvalidInput({ detail: `cannot listen on --runner-host ${host}: ${error.message}` })))
    )
    server.listen(0, host, () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resume(Effect.succeed(port)))
    })
  })

export const daemon = (
  o: Paths & {
    readonly host: string
    readonly port: number
    readonly token: Option.Option<string>
    readonly allowOrigin: ReadonlyArray<string>
    readonly allowHost: ReadonlyArray<string>
    readonly maxFrameBytes: Option.Option<number>
    readonly logFormat: LogFormat
    readonly cluster: boolean
    readonly runnerHost: string
    readonly runnerPort: Option.Option<number>
    readonly leaseMs: Option.Option<number>
  }
) =>
  Effect.scoped(
    Effect.gen(function* () {
      // Options first: a daemon refused for one leaves its database untouched.
      yield* Effect.forEach(o.allowHost, normaliseAllowedHost)
      yield* Effect.forEach(o.allowOrigin, normaliseOrigin)
      const database = yield* databaseOf(o)
      const cluster = yield* clusterOf(o, database)
      const running = yield* startDaemon({
        cluster,
        host: o.host,
        port: o.port,
        token: Option.getOrUndefined(o.token),
        tokenSource: "--token (or SKEIN_TOKEN)",
        allowedOrigins: o.allowOrigin,
        allowedHosts: o.allowHost,
        dbPath: database,
        dataDir: Option.getOrUndefined(o.dataDir),
        configFile: Option.getOrUndefined(o.config),
        maxFrameBytes: Option.getOrUndefined(o.maxFrameBytes)
      })
      if (running.tokenFile !== undefined) {
        yield* Console.error(`skein: clients need the token in ${running.tokenFile} (the CLI reads it from there)`)
      }
      yield* Console.log(`skein listening on ${running.url}`)
      return yield* Effect.never
    })
  ).pipe(Effect.provide(loggerLayer(o.logFormat)), reportFailures())

export const stdio = (o: Paths) =>
  Effect.gen(function* () {
    const { dataDir: dir, dbPath } = resolvePaths({
      dbPath: yield* databaseOf(o),
      dataDir: Option.getOrUndefined(o.dataDir)
    })
    yield* ensureDataDir(dir)
    yield* Effect.scoped(
      serveStdio({
        stdin,
        writeLine: (line) => Effect.sync(() => void process.stdout.write(`${line}\n`))
      })
    ).pipe(
      Effect.provide(skeinRuntimeLayer({ dbPath, dataDir: dir, configFile: Option.getOrUndefined(o.config) })),
      withTelemetryFromEnv
    )
  }).pipe(reportFailures())

/** `skein acp`: Skein as an ACP agent on stdio, over an embedded runtime or, with `--url`, a daemon. */
export const acp = (o: Paths & { readonly url: Option.Option<string>; readonly token: Option.Option<string> }) =>
  Effect.gen(function* () {
    if (Option.isSome(o.url)) {
      return yield* Effect.scoped(
        Effect.flatMap(makeSkeinClient({ url: o.url.value, token: Option.getOrUndefined(o.token) }), (client) =>
          serveAcpWith(clientBackend(client))
        )
      )
    }
    const { dataDir: dir, dbPath } = resolvePaths({
      dbPath: yield* databaseOf(o),
      dataDir: Option.getOrUndefined(o.dataDir)
    })
    yield* ensureDataDir(dir)
    yield* serveAcpStdio.pipe(
      Effect.provide(skeinRuntimeLayer({ dbPath, dataDir: dir, configFile: Option.getOrUndefined(o.config) })),
      withTelemetryFromEnv
    )
  }).pipe(reportFailures())

export const demo = (o: { readonly json: boolean }) => runDemo({ json: o.json }).pipe(reportFailures())
