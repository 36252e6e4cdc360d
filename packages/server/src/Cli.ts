/**
 * The `skein` command line: the daemon, the stdio server, a raw `call` of any RPC
 * method, a human command for every capability (each with `--json`), and the offline demo.
 *
 * This module only declares the commands and their arguments; their help is `Help.ts`
 * (answered here before @effect/cli parses anything); what each command does is
 * imported when it runs: `ClientCommands.ts` for `call` and the human commands (the
 * typed client), `ServerCommands.ts` for `daemon`, `stdio` and `demo` (the runtime, the
 * adapters, SQLite). So `skein --help` loads neither, a client command never loads the
 * runtime, and the bundle (`build.mjs`) keeps each half in chunks of its own.
 *
 * Failures print one line for a person on stderr (`skein: …`), or with `--json` (and
 * for `call`) the typed error as JSON (`{"_tag":…,"message":…,…}`), and exit non-zero.
 */
import { Args, Command, Options } from "@effect/cli"
import { Config, Console, Effect, Option } from "effect"
import { DEFAULT_HOST, DEFAULT_PORT } from "./Address.js"
import { CliExit } from "./CliExit.js"
import { colourFor } from "./CliStyle.js"
import { helpRequest } from "./Help.js"
import { LogFormats } from "./LogFormat.js"
import { SKEIN_VERSION } from "./Version.js"

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
  Options.withDefault(`ws://${DEFAULT_HOST}:${DEFAULT_PORT}/rpc`)
)
const token = Options.text("token").pipe(
  Options.withFallbackConfig(Config.string("SKEIN_TOKEN")),
  Options.optional,
  // An empty SKEIN_TOKEN is no token.
  Options.map(Option.filter((t) => t.trim() !== ""))
)
const daemonToken = Options.text("token").pipe(
  Options.withFallbackConfig(Config.string("SKEIN_TOKEN")),
  Options.optional
)
const allowOrigin = Options.text("allow-origin").pipe(Options.repeated)
const allowHost = Options.text("allow-host").pipe(Options.repeated)
const json = Options.boolean("json")
const db = Options.text("db").pipe(Options.optional)
/** The database as a PostgreSQL URL instead of the SQLite file (`--db`); from the environment, its password stays out of `ps`. */
const store = Options.text("store").pipe(Options.withFallbackConfig(Config.string("SKEIN_STORE")), Options.optional)
const config = Options.file("config").pipe(Options.optional)
const dataDir = Options.directory("data-dir").pipe(Options.optional)
const limit = Options.integer("limit").pipe(Options.optional)

const connection = { url, token }

// ---- daemon / stdio ---------------------------------------------------------------

const daemon = Command.make(
  "daemon",
  {
    db,
    store,
    config,
    dataDir,
    host: Options.text("host").pipe(Options.withDefault(DEFAULT_HOST)),
    port: Options.integer("port").pipe(Options.withDefault(DEFAULT_PORT)),
    token: daemonToken,
    allowOrigin,
    allowHost,
    maxFrameBytes: Options.integer("max-frame-bytes").pipe(Options.optional),
    cluster: Options.boolean("cluster"),
    runnerHost: Options.text("runner-host").pipe(Options.withDefault(DEFAULT_HOST)),
    runnerPort: Options.integer("runner-port").pipe(Options.optional),
    leaseMs: Options.integer("lease-ms").pipe(Options.optional),
    logFormat: Options.choice("log-format", LogFormats).pipe(Options.withDefault("logfmt" as const))
  },
  (o) => server((commands) => commands.daemon(o))
)

const stdio = Command.make("stdio", { db, store, config, dataDir }, (o) => server((commands) => commands.stdio(o)))

const acpAgent = Command.make(
  "acp",
  { db, store, config, dataDir, url: Options.text("url").pipe(Options.optional), token },
  (o) => server((commands) => commands.acp(o))
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
)

// ---- human commands ---------------------------------------------------------------

const title = Options.text("title").pipe(Options.optional)
const threadArg = Args.text({ name: "THREAD" })
const provider = Args.text({ name: "PROVIDER" })
const listFilter = {
  root: Options.text("root").pipe(Options.optional),
  parent: Options.text("parent").pipe(Options.optional),
  limit: Options.integer("limit").pipe(Options.optional)
}

const threadNew = Command.make(
  "new",
  { ...connection, json, title, workspace: Options.text("workspace").pipe(Options.optional) },
  (o) => client((commands) => commands.threadNew(o))
)
const threadList = Command.make("list", { ...connection, json, ...listFilter }, (o) =>
  client((commands) => commands.threads(o))
)
const thread = Command.make("thread").pipe(Command.withSubcommands([threadNew, threadList]))
const threads = Command.make("threads", { ...connection, json, ...listFilter }, (o) =>
  client((commands) => commands.threads(o))
)

const send = Command.make(
  "send",
  {
    ...connection,
    json,
    model: Options.text("model").pipe(Options.optional),
    cleanContext: Options.boolean("clean-context"),
    budget: Options.integer("budget").pipe(Options.optional),
    whenBusy: Options.choice("when-busy", ["refuse", "queue", "steer", "interrupt"]).pipe(Options.optional),
    thread: threadArg,
    provider,
    message: Args.text({ name: "MESSAGE" })
  },
  (o) => client((commands) => commands.send(o))
)

const show = Command.make(
  "show",
  { ...connection, json, messages: Options.boolean("messages"), thread: threadArg },
  (o) => client((commands) => commands.show(o))
)

const follow = Command.make(
  "follow",
  { ...connection, json, limit, from: Options.integer("from").pipe(Options.optional), thread: threadArg },
  (o) => client((commands) => commands.follow(o))
)

const interrupt = Command.make(
  "interrupt",
  { ...connection, json, run: Options.text("run").pipe(Options.optional), thread: threadArg },
  (o) => client((commands) => commands.interrupt(o))
)

const approve = Command.make(
  "approve",
  // [APPROVAL] DECISION: one or two words after THREAD, told apart by ClientCommands.
  {
    ...connection,
    json,
    thread: threadArg,
    words: Args.text({ name: "DECISION" }).pipe(Args.between(1, 2))
  },
  (o) => client((commands) => commands.approve(o))
)

const subagent = Command.make(
  "subagent",
  { ...connection, json, thread: threadArg, provider, prompt: Args.text({ name: "PROMPT" }) },
  (o) => client((commands) => commands.subagent(o))
)

const handoff = Command.make("handoff", { ...connection, json, id: Args.text({ name: "ID" }) }, (o) =>
  client((commands) => commands.handoff(o))
)

const providers = Command.make("providers", { ...connection, json }, (o) => client((commands) => commands.providers(o)))

// ---- lineage ----------------------------------------------------------------------

const fork = Command.make(
  "fork",
  {
    ...connection,
    json,
    thread: threadArg,
    run: Options.text("run").pipe(Options.optional),
    checkpoint: Options.text("checkpoint").pipe(Options.optional),
    sideChat: Options.boolean("side-chat"),
    title
  },
  (o) => client((commands) => commands.fork(o))
)

const mergeBack = Command.make("merge-back", { ...connection, json, fork: Args.text({ name: "FORK" }) }, (o) =>
  client((commands) => commands.mergeBack(o))
)

const rollback = Command.make(
  "rollback",
  {
    ...connection,
    json,
    thread: threadArg,
    to: Args.text({ name: "RUN" }),
    restoreFiles: Options.boolean("restore-files"),
    dryRun: Options.boolean("dry-run")
  },
  (o) => client((commands) => commands.rollback(o))
)

const tree = Command.make("tree", { ...connection, json, thread: threadArg }, (o) =>
  client((commands) => commands.tree(o))
)

const inspect = Command.make(
  "inspect",
  { ...connection, open: Options.boolean("open"), thread: threadArg.pipe(Args.optional) },
  (o) => client((commands) => commands.inspect(o))
)

const demo = Command.make("demo", { json }, (o) => server((commands) => commands.demo(o)))

export const skeinCommand = Command.make("skein").pipe(
  Command.withSubcommands([
    daemon,
    stdio,
    acpAgent,
    call,
    thread,
    threads,
    send,
    show,
    follow,
    interrupt,
    approve,
    subagent,
    handoff,
    providers,
    fork,
    mergeBack,
    rollback,
    tree,
    inspect,
    demo
  ])
)

const parseAndRun = Command.run(skeinCommand, { name: "skein", version: SKEIN_VERSION })

/**
 * Runs the CLI on `process.argv`-shaped arguments. Help (`--help`, `-h`, `help CMD`,
 * no command) is Skein's own, coloured only on a terminal without NO_COLOR; there is no
 * wizard mode.
 */
export const runCli = (argv: ReadonlyArray<string>) => {
  const request = helpRequest(argv.slice(2))
  if (request === undefined) return parseAndRun(argv)
  return request._tag === "Help"
    ? Console.log(request.text(colourFor(process.stdout)))
    : Console.error(`skein: ${request.message}`).pipe(Effect.zipRight(Effect.fail(new CliExit({ code: 2 }))))
}
