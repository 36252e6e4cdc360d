/**
 * The `skein` command line: the daemon, the stdio server, a raw `call` of any RPC
 * method, human commands on top (each with `--json`), and the offline demo.
 *
 * Failures print the typed error as JSON on stderr (`{"_tag":…,"message":…,…}`)
 * and exit non-zero.
 */
import { Args, Command, Options } from "@effect/cli"
import { NodeStream } from "@effect/platform-node"
import { RpcSchema } from "@effect/rpc"
import {
  AppThread,
  ContextTransfer,
  ForkThreadFields,
  InvalidInput,
  RunView,
  SkeinError,
  SkeinRpcs,
  StartRunFields,
  StoredEvent,
  ThreadId,
  ThreadView
} from "@skein/domain"
import { Cause, Config, Console, Data, Effect, Option, Schema, Stream } from "effect"
import type { Scope } from "effect"
import { HandshakeRefused, makeSkeinClient, type SkeinClientShape } from "./Client.js"
import { startDaemon } from "./Daemon.js"
import { runDemo } from "./Demo.js"
import { assistantReply, eventLine, showLines, treeLines } from "./Presentation.js"
import type { LineageNode } from "./Presentation.js"
import { serveStdio } from "./Stdio.js"
import { resolvePaths } from "./Daemon.js"
import { skeinRuntimeLayer } from "./SkeinRuntime.js"
import { DEFAULT_HOST, DEFAULT_PORT } from "./WebSocketServer.js"

/** A failure already reported on stderr; the process exits with `code`. */
export class CliExit extends Data.TaggedError("CliExit")<{ readonly code: number }> {}

const encodeSkeinError = Schema.encodeSync(SkeinError)

/** The JSON form of any failure: `_tag`, `message`, and the error's own fields. */
export const errorJson = (error: unknown, context: { readonly url?: string } = {}): Record<string, unknown> => {
  if (Schema.is(SkeinError)(error)) return { ...encodeSkeinError(error), message: error.message }
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const tagged = error as { readonly _tag: string; readonly message?: unknown }
    if (tagged._tag === "RpcClientError") {
      const cause = (error as { readonly cause?: unknown }).cause
      if (cause instanceof HandshakeRefused) {
        return {
          _tag: cause.status === 401 ? "Unauthorized" : "ConnectionRefused",
          status: cause.status,
          message: cause.message
        }
      }
      return {
        _tag: "ConnectionFailed",
        message: `Could not reach Skein${context.url === undefined ? "" : ` at ${context.url}`}: ${String(tagged.message)}. Is the daemon running (skein daemon)?`
      }
    }
    return { _tag: tagged._tag, message: String(tagged.message ?? tagged._tag) }
  }
  return { _tag: "Defect", message: String(error) }
}

/** Prints the failure as JSON on stderr and turns it into a `CliExit`. */
const reportFailures =
  (context: { readonly url?: string } = {}) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CliExit, R> =>
    effect.pipe(
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const failure = Cause.failureOption(cause)
        const error = Option.isSome(failure) ? failure.value : Cause.squash(cause)
        if (error instanceof CliExit) return Effect.fail(error)
        return Console.error(JSON.stringify(errorJson(error, context))).pipe(
          Effect.zipRight(Effect.fail(new CliExit({ code: 1 })))
        )
      })
    )

// ---- shared options -------------------------------------------------------------

const url = Options.text("url").pipe(
  Options.withFallbackConfig(Config.string("SKEIN_URL")),
  Options.withDefault(`ws://${DEFAULT_HOST}:${DEFAULT_PORT}/rpc`),
  Options.withDescription("The daemon's RPC url (env SKEIN_URL).")
)
const token = Options.text("token").pipe(
  Options.withFallbackConfig(Config.string("SKEIN_TOKEN")),
  Options.optional,
  // An empty SKEIN_TOKEN is no token.
  Options.map(Option.filter((t) => t.trim() !== "")),
  Options.withDescription(
    "The daemon's token (env SKEIN_TOKEN). Clients default to the token file DATA_DIR/token of a loopback daemon."
  )
)
const daemonToken = Options.text("token").pipe(
  Options.withFallbackConfig(Config.string("SKEIN_TOKEN")),
  Options.optional,
  Options.withDescription(
    "Require this token (env SKEIN_TOKEN; at least 32 random characters). Default: the token in DATA_DIR/token, generated on first start."
  )
)
const allowOrigin = Options.text("allow-origin").pipe(
  Options.repeated,
  Options.withDescription(
    "Let web pages of this origin connect (e.g. http://localhost:5173); repeatable. Pages of any other origin are refused."
  )
)
const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))
const db = Options.text("db").pipe(
  Options.optional,
  Options.withDescription("SQLite file (default DATA_DIR/skein.db).")
)
const config = Options.file("config").pipe(Options.optional, Options.withDescription("Provider instances (JSON)."))
const dataDir = Options.directory("data-dir").pipe(
  Options.optional,
  Options.withDescription("Data directory (default $SKEIN_HOME or ~/.skein).")
)
const limit = Options.integer("limit").pipe(Options.optional, Options.withDescription("Stop after N stream items."))

const connection = { url, token }

const withClient = <A, E>(
  options: { readonly url: string; readonly token: Option.Option<string> },
  use: (client: SkeinClientShape) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.scoped(
    Effect.flatMap(makeSkeinClient({ url: options.url, token: Option.getOrUndefined(options.token) }), use)
  ).pipe(reportFailures({ url: options.url }))

const printJson = (value: unknown) => Console.log(JSON.stringify(value))

// ---- daemon / stdio ---------------------------------------------------------------

const daemon = Command.make(
  "daemon",
  {
    db,
    config,
    dataDir,
    host: Options.text("host").pipe(Options.withDefault(DEFAULT_HOST)),
    port: Options.integer("port").pipe(
      Options.withDefault(DEFAULT_PORT),
      Options.withDescription("0 picks a free port.")
    ),
    token: daemonToken,
    allowOrigin,
    maxFrameBytes: Options.integer("max-frame-bytes").pipe(Options.optional)
  },
  (o) =>
    Effect.scoped(
      Effect.gen(function* () {
        const running = yield* startDaemon({
          host: o.host,
          port: o.port,
          token: Option.getOrUndefined(o.token),
          tokenSource: "--token (or SKEIN_TOKEN)",
          allowedOrigins: o.allowOrigin,
          dbPath: Option.getOrUndefined(o.db),
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
    ).pipe(reportFailures())
).pipe(Command.withDescription("Run Skein as a daemon serving the RPC over WebSocket."))

const stdio = Command.make("stdio", { db, config, dataDir }, (o) =>
  Effect.gen(function* () {
    const { dataDir: dir, dbPath } = resolvePaths({
      dbPath: Option.getOrUndefined(o.db),
      dataDir: Option.getOrUndefined(o.dataDir)
    })
    yield* Effect.scoped(
      serveStdio({
        stdin: NodeStream.stdin,
        writeLine: (line) => Effect.sync(() => void process.stdout.write(`${line}\n`))
      })
    ).pipe(Effect.provide(skeinRuntimeLayer({ dbPath, dataDir: dir, configFile: Option.getOrUndefined(o.config) })))
  }).pipe(reportFailures())
).pipe(Command.withDescription("Serve the RPC over stdin/stdout (one JSON message per line), for a parent process."))

// ---- call -------------------------------------------------------------------------

const parseJsonArg = (raw: Option.Option<string>): Effect.Effect<unknown, InvalidInput> =>
  Option.match(raw, {
    onNone: () => Effect.succeed({}),
    onSome: (text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) => new InvalidInput({ detail: `the JSON argument does not parse (${(e as Error).message})` })
      })
  })

const call = Command.make(
  "call",
  {
    ...connection,
    limit,
    method: Args.text({ name: "METHOD" }),
    payload: Args.text({ name: "JSON" }).pipe(Args.optional)
  },
  (o) =>
    withClient(o, (client) =>
      Effect.gen(function* () {
        const rpc = SkeinRpcs.requests.get(o.method)
        if (rpc === undefined) {
          return yield* new InvalidInput({
            detail: `unknown method "${o.method}"; methods are ${Array.from(SkeinRpcs.requests.keys()).join(", ")}`
          })
        }
        const raw = yield* parseJsonArg(o.payload)
        const payload = yield* Schema.decodeUnknown(rpc.payloadSchema as Schema.Schema<unknown, unknown>)(raw).pipe(
          Effect.mapError((e) => new InvalidInput({ detail: `${o.method}: ${e.message}` }))
        )
        const [prefix, name] = o.method.split(".") as [string, string]
        // The typed client is indexed by method name; `call` takes the name at run time.
        const method = (client as unknown as Record<string, Record<string, (p: unknown) => unknown>>)[prefix]![name]!
        const stream = RpcSchema.getStreamSchemas(rpc.successSchema.ast)
        if (Option.isSome(stream)) {
          const encode = Schema.encode(stream.value.success as Schema.Schema<unknown, unknown>)
          const items = method(payload) as Stream.Stream<unknown, unknown>
          const bounded = Option.match(o.limit, { onNone: () => items, onSome: (n) => Stream.take(items, n) })
          return yield* Stream.runForEach(bounded, (item) => Effect.flatMap(encode(item), printJson))
        }
        const result = yield* method(payload) as Effect.Effect<unknown, unknown>
        const encoded = yield* Schema.encode(rpc.successSchema as Schema.Schema<unknown, unknown>)(result)
        yield* printJson(encoded)
      })
    )
).pipe(Command.withDescription("Call any RPC method with a JSON payload; prints the JSON result (NDJSON for streams)."))

// ---- human commands ---------------------------------------------------------------

const threadNew = Command.make(
  "new",
  { ...connection, json, title: Options.text("title").pipe(Options.optional) },
  (o) =>
    withClient(o, (client) =>
      Effect.gen(function* () {
        const thread = yield* client.thread.create(Option.isSome(o.title) ? { title: o.title.value } : {})
        yield* o.json ? printJson(Schema.encodeSync(AppThread)(thread)) : Console.log(thread.id)
      })
    )
)
const thread = Command.make("thread").pipe(
  Command.withSubcommands([threadNew]),
  Command.withDescription("Thread commands.")
)

const threadArg = Args.text({ name: "THREAD" })
const StartRunPayload = Schema.Struct(StartRunFields)
const decodeThreadId = (raw: string) =>
  Schema.decodeUnknown(ThreadId)(raw).pipe(Effect.mapError((e) => new InvalidInput({ detail: `THREAD: ${e.message}` })))

const send = Command.make(
  "send",
  {
    ...connection,
    json,
    thread: threadArg,
    provider: Args.text({ name: "PROVIDER" }),
    message: Args.text({ name: "MESSAGE" })
  },
  (o) =>
    withClient(o, (client) =>
      Effect.gen(function* () {
        const payload = yield* Schema.decodeUnknown(StartRunPayload)({
          threadId: o.thread,
          provider: o.provider,
          message: o.message,
          wait: true
        }).pipe(Effect.mapError((e) => new InvalidInput({ detail: e.message })))
        const run = yield* client.run.start(payload)
        if (o.json) return yield* printJson(Schema.encodeSync(RunView)(run))
        yield* Console.log(assistantReply(run))
        if (run.status !== "completed") {
          yield* Console.error(
            `run ${run.ordinal} ${run.status}${run.failure === null ? "" : `: ${run.failure.message}`}`
          )
          return yield* new CliExit({ code: 1 })
        }
      })
    )
).pipe(Command.withDescription("Send a message to a provider on a thread; waits for the run and prints the reply."))

const show = Command.make("show", { ...connection, json, thread: threadArg }, (o) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const view = yield* client.thread.get({ threadId: yield* decodeThreadId(o.thread) })
      yield* o.json ? printJson(Schema.encodeSync(ThreadView)(view)) : Console.log(showLines(view).join("\n"))
    })
  )
).pipe(Command.withDescription("Show a thread: runs, lineage, provider coverage and handoffs."))

const follow = Command.make(
  "follow",
  { ...connection, json, limit, from: Options.integer("from").pipe(Options.optional), thread: threadArg },
  (o) =>
    withClient(o, (client) =>
      Effect.gen(function* () {
        const threadId = yield* decodeThreadId(o.thread)
        const events = client.thread.events(
          Option.isSome(o.from) ? { threadId, fromSequence: o.from.value } : { threadId }
        )
        const bounded = Option.match(o.limit, { onNone: () => events, onSome: (n) => Stream.take(events, n) })
        yield* Stream.runForEach(bounded, (e) =>
          o.json ? printJson(Schema.encodeSync(StoredEvent)(e)) : Console.log(eventLine(e))
        )
      })
    )
).pipe(Command.withDescription("Print a thread's events (replay, then live) until interrupted or --limit."))

// ---- lineage ----------------------------------------------------------------------

const fork = Command.make(
  "fork",
  {
    ...connection,
    json,
    thread: threadArg,
    run: Options.text("run").pipe(
      Options.optional,
      Options.withDescription("Fork at this run (default: latest stable).")
    ),
    checkpoint: Options.text("checkpoint").pipe(Options.optional, Options.withDescription("Fork at this checkpoint.")),
    sideChat: Options.boolean("side-chat").pipe(Options.withDescription("A fork shown only with its parent.")),
    title: Options.text("title").pipe(Options.optional)
  },
  (o) =>
    withClient(o, (client) =>
      Effect.gen(function* () {
        const payload = yield* Schema.decodeUnknown(Schema.Struct(ForkThreadFields))({
          sourceThreadId: o.thread,
          sourcePoint: Option.isSome(o.run)
            ? { runId: o.run.value }
            : Option.isSome(o.checkpoint)
              ? { checkpointId: o.checkpoint.value }
              : "latest_stable",
          ...(o.sideChat ? { sideChat: true } : {}),
          ...(Option.isSome(o.title) ? { title: o.title.value } : {})
        }).pipe(Effect.mapError((e) => new InvalidInput({ detail: e.message })))
        const forked = yield* client.thread.fork(payload)
        yield* o.json ? printJson(Schema.encodeSync(AppThread)(forked.thread)) : Console.log(forked.thread.id)
      })
    )
).pipe(Command.withDescription("Fork a thread at a stable point; cheap: the fork's first run resolves its context."))

const mergeBack = Command.make("merge-back", { ...connection, json, fork: Args.text({ name: "FORK" }) }, (o) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const transfer = yield* client.thread.mergeBack({ forkThreadId: yield* decodeThreadId(o.fork) })
      yield* o.json
        ? printJson(Schema.encodeSync(ContextTransfer)(transfer))
        : Console.log(`${transfer.id} merge_back ${transfer.status} into ${transfer.targetThreadId}`)
    })
  )
).pipe(Command.withDescription("Bring a fork's work into its source thread's next run."))

const rollback = Command.make(
  "rollback",
  {
    ...connection,
    json,
    thread: threadArg,
    to: Args.integer({ name: "RUN" }),
    restoreFiles: Options.boolean("restore-files").pipe(
      Options.withDescription("Also write the workspace back to run RUN's checkpoint.")
    )
  },
  (o) =>
    withClient(o, (client) =>
      Effect.gen(function* () {
        const view = yield* client.thread.rollback({
          threadId: yield* decodeThreadId(o.thread),
          toRunOrdinal: o.to,
          ...(o.restoreFiles ? { restoreFiles: true } : {})
        })
        yield* o.json ? printJson(Schema.encodeSync(ThreadView)(view)) : Console.log(showLines(view).join("\n"))
      })
    )
).pipe(Command.withDescription("Roll a thread back to run RUN (0 empties it); later runs become rolled_back."))

const tree = Command.make("tree", { ...connection, json, thread: threadArg }, (o) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const load = (threadId: ThreadId, depth: number): Effect.Effect<LineageNode, unknown> =>
        Effect.gen(function* () {
          const view = yield* client.thread.get({ threadId })
          const children =
            depth >= 32 ? [] : yield* Effect.forEach(view.children, (c) => load(c.id, depth + 1), { concurrency: 4 })
          return { view, children }
        })
      const root = yield* load(yield* decodeThreadId(o.thread), 0)
      const encode = (node: LineageNode): unknown => ({
        thread: Schema.encodeSync(ThreadView)(node.view),
        children: node.children.map(encode)
      })
      yield* o.json ? printJson(encode(root)) : Console.log(treeLines(root).join("\n"))
    })
  )
).pipe(
  Command.withDescription("The lineage tree of a thread: forks, side chats, subagents, coverage, pending transfers.")
)

const demo = Command.make("demo", { json }, (o) => runDemo({ json: o.json }).pipe(reportFailures())).pipe(
  Command.withDescription("Run the seed example offline (scripted codex and claude) and print the coverage table.")
)

export const skeinCommand = Command.make("skein").pipe(
  Command.withSubcommands([daemon, stdio, call, thread, send, show, follow, fork, mergeBack, rollback, tree, demo]),
  Command.withDescription("Skein: one conversation across coding-agent providers.")
)

/** Runs the CLI on `process.argv`-shaped arguments. */
export const runCli = Command.run(skeinCommand, { name: "skein", version: "0.1.0" })
