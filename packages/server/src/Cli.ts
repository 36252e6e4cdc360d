/**
 * The `skein` command line: the daemon, the stdio server, a raw `call` of any RPC
 * method, human commands on top (each with `--json`), and the offline demo.
 *
 * This module only declares the commands, their arguments and their help; what each
 * command does is imported when it runs: `ClientCommands.ts` for `call` and the human
 * commands (the typed client), `ServerCommands.ts` for `daemon`, `stdio` and `demo` (the
 * runtime, the adapters, SQLite). So `skein --help` loads neither, a client command never
 * loads the runtime, and the bundle (`build.mjs`) keeps each half in chunks of its own.
 *
 * Failures print the typed error as JSON on stderr (`{"_tag":…,"message":…,…}`)
 * and exit non-zero.
 */
import { Args, Command, Options } from "@effect/cli"
import { Config, Effect, Option } from "effect"
import { DEFAULT_HOST, DEFAULT_PORT } from "./Address.js"
import type { CliExit } from "./CliExit.js"

export { CliExit } from "./CliExit.js"

type ClientCommands = typeof import("./ClientCommands.js")
type ServerCommands = typeof import("./ServerCommands.js")

/** Runs a client command, loading the client when it starts. */
const client = <R>(run: (commands: ClientCommands) => Effect.Effect<void, CliExit, R>) =>
  Effect.flatMap(
    Effect.promise(() => import("./ClientCommands.js")),
    run
  )

/** Runs a server command, loading the runtime when it starts. */
const server = <R>(run: (commands: ServerCommands) => Effect.Effect<void, CliExit, R>) =>
  Effect.flatMap(
    Effect.promise(() => import("./ServerCommands.js")),
    run
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
const allowHost = Options.text("allow-host").pipe(
  Options.repeated,
  Options.withDescription(
    "Answer requests addressed to this host name too (e.g. skein.internal); repeatable. A daemon on a loopback address answers only loopback names by default."
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
    allowHost,
    maxFrameBytes: Options.integer("max-frame-bytes").pipe(Options.optional)
  },
  (o) => server((commands) => commands.daemon(o))
).pipe(Command.withDescription("Run Skein as a daemon serving the RPC over WebSocket."))

const stdio = Command.make("stdio", { db, config, dataDir }, (o) => server((commands) => commands.stdio(o))).pipe(
  Command.withDescription("Serve the RPC over stdin/stdout (one JSON message per line), for a parent process.")
)

// ---- call -------------------------------------------------------------------------

const call = Command.make(
  "call",
  {
    ...connection,
    limit,
    method: Args.text({ name: "METHOD" }),
    payload: Args.text({ name: "JSON" }).pipe(Args.optional)
  },
  (o) => client((commands) => commands.call(o))
).pipe(Command.withDescription("Call any RPC method with a JSON payload; prints the JSON result (NDJSON for streams)."))

// ---- human commands ---------------------------------------------------------------

const threadNew = Command.make(
  "new",
  { ...connection, json, title: Options.text("title").pipe(Options.optional) },
  (o) => client((commands) => commands.threadNew(o))
)
const thread = Command.make("thread").pipe(
  Command.withSubcommands([threadNew]),
  Command.withDescription("Thread commands.")
)

const threadArg = Args.text({ name: "THREAD" })

const send = Command.make(
  "send",
  {
    ...connection,
    json,
    thread: threadArg,
    provider: Args.text({ name: "PROVIDER" }),
    message: Args.text({ name: "MESSAGE" })
  },
  (o) => client((commands) => commands.send(o))
).pipe(Command.withDescription("Send a message to a provider on a thread; waits for the run and prints the reply."))

const show = Command.make("show", { ...connection, json, thread: threadArg }, (o) =>
  client((commands) => commands.show(o))
).pipe(Command.withDescription("Show a thread: runs, lineage, provider coverage and handoffs."))

const follow = Command.make(
  "follow",
  { ...connection, json, limit, from: Options.integer("from").pipe(Options.optional), thread: threadArg },
  (o) => client((commands) => commands.follow(o))
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
  (o) => client((commands) => commands.fork(o))
).pipe(Command.withDescription("Fork a thread at a stable point; cheap: the fork's first run resolves its context."))

const mergeBack = Command.make("merge-back", { ...connection, json, fork: Args.text({ name: "FORK" }) }, (o) =>
  client((commands) => commands.mergeBack(o))
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
  (o) => client((commands) => commands.rollback(o))
).pipe(Command.withDescription("Roll a thread back to run RUN (0 empties it); later runs become rolled_back."))

const tree = Command.make("tree", { ...connection, json, thread: threadArg }, (o) =>
  client((commands) => commands.tree(o))
).pipe(
  Command.withDescription("The lineage tree of a thread: forks, side chats, subagents, coverage, pending transfers.")
)

const demo = Command.make("demo", { json }, (o) => server((commands) => commands.demo(o))).pipe(
  Command.withDescription("Run the seed example offline (scripted codex and claude) and print the coverage table.")
)

export const skeinCommand = Command.make("skein").pipe(
  Command.withSubcommands([daemon, stdio, call, thread, send, show, follow, fork, mergeBack, rollback, tree, demo]),
  Command.withDescription("Skein: one conversation across coding-agent providers.")
)

/** Runs the CLI on `process.argv`-shaped arguments. */
export const runCli = Command.run(skeinCommand, { name: "skein", version: "0.1.0" })
